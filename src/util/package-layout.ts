/** Names in a package directory that the executor needs too (it looks for its package's tools). */
export const MANIFEST_NAME = "relay-package.json";
/** Put first on PATH for the executor's commands. */
export const PATH_DIR = "relay-path";
