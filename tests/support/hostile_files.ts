/**
 * Things that are not regular files, for the tests of rule 1 of "Hostile inputs"
 * (docs/design.md): each must be refused by name, at once, wherever a program reads a file.
 *
 * @module
 */

import { assert } from "./assert.ts";

/** One thing that is not a regular file: its name, where it is, and what a refusal calls it. */
export interface HostileFile {
  /** What it is, for a test's messages. */
  name: string;
  /** Its path. */
  path: string;
  /** The reader's words for it ("it is a FIFO, not a regular file"). */
  message: string;
}

/** Creates a FIFO at `path`. */
export async function mkfifo(path: string): Promise<void> {
  const out = await new Deno.Command("mkfifo", { args: [path] }).output();
  assert(out.success, new TextDecoder().decode(out.stderr));
}

/**
 * Makes, in `dir`, each kind of thing that is not a regular file, named `<kind><suffix>`: a FIFO,
 * a socket (listening until `close`), a directory, a symlink to `/dev/zero`, a symlink to a FIFO.
 */
export async function hostileFiles(
  dir: string,
  suffix = "",
): Promise<{ files: HostileFile[]; close: () => void }> {
  const at = (name: string) => `${dir}/${name}${suffix}`;
  await mkfifo(at("fifo"));
  // Deno removes a socket's file when it is closed: held open until the test is done.
  const socket = Deno.listen({ transport: "unix", path: at("socket") });
  await Deno.mkdir(at("directory"));
  await Deno.symlink("/dev/zero", at("zero"));
  await Deno.symlink(`fifo${suffix}`, at("to-fifo"));
  const not = (what: string) => `it is ${what}, not a regular file`;
  return {
    files: [
      { name: "a FIFO", path: at("fifo"), message: not("a FIFO") },
      { name: "a socket", path: at("socket"), message: not("a socket") },
      { name: "a directory", path: at("directory"), message: not("a directory") },
      {
        name: "a symlink to /dev/zero",
        path: at("zero"),
        message: not("a symbolic link to a character device"),
      },
      {
        name: "a symlink to a FIFO",
        path: at("to-fifo"),
        message: not("a symbolic link to a FIFO"),
      },
    ],
    close: () => socket.close(),
  };
}

/** Makes a sparse file of `size` bytes at `path` (it takes no disk). */
export async function sparseFile(path: string, size: number): Promise<void> {
  await Deno.writeTextFile(path, "{");
  await Deno.truncate(path, size);
}
