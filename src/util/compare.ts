/**
 * Orders strings by UTF-16 code units: the same order in every locale, and no ICU collator to
 * load (`localeCompare`'s first use costs a process about 0.5 ms and 3 MiB).
 */
export function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
