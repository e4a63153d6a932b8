/** `import source from "./x.c" with { type: "text" }`: Bun inlines the file's text. */
declare module "*.c" {
  const text: string;
  export default text;
}
