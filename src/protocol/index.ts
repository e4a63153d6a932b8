export * from "./child.ts";
export * from "./command-line.ts";
export * from "./frame.ts";
export * from "./peer.ts";
export { runUntilClosed, serveStdio } from "./stdio-server.ts";
