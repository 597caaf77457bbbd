/**
 * The observers: each reads one source and never changes anything.
 *
 * @module
 */

export * from "./source.ts";
export * from "./containers.ts";
export * from "./sockets.ts";
export * from "./proxy.ts";
export * from "../../lib/systemd.ts";
export * from "../../lib/init_system.ts";
export * from "./timers.ts";
export * from "./boot.ts";
