/**
 * amqplib's `connect`, re-exported from a module of ours so that a command can load the client
 * when it first needs it (`await import("../lib/amqplib.ts")`). amqplib is CommonJS: imported
 * dynamically by its own name, a program bundled with code splitting (as the one-file programs
 * are) gets only its default export, and `const { connect } = await import("amqplib")` is then
 * `undefined`; a static named import, as here, works both from the sources and bundled.
 *
 * @module
 */

export { connect } from "amqplib";
