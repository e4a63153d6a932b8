/** `import path from "./x.c" with { type: "file" }`: Bun embeds the file and gives its path. */
declare module "*.c" {
  const path: string;
  export default path;
}
