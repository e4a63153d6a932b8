/** Names shared by the globals (src/codemode/vm.ts) and the cell that runs them. */

/** What `exit()` throws: the cell treats it as a normal completion. */
export const EXIT_SENTINEL = "__relay_code_mode_exit__";

export function normalizeToolIdentifier(name: string): string {
  let id = name.replace(/[^A-Za-z0-9_$]/g, "_");
  if (id === "") id = "_";
  if (/^[0-9]/.test(id)) id = `_${id.slice(1)}`;
  return id;
}
