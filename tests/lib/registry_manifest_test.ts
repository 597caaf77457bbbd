/**
 * lib/registry_manifest.ts: which registries are this machine's (spoken to in plain HTTP without
 * being told): the host of `host[:port]` by lib/wire_trust.ts's one loopback rule.
 *
 * @module
 */

import { assert } from "../support/assert.ts";
import { isLoopback } from "../../lib/registry_manifest.ts";

Deno.test("a registry is loopback by the one rule: host[:port], IPv6 in brackets", () => {
  for (
    const r of ["127.0.0.1:5000", "127.0.0.1", "localhost:5000", "LOCALHOST", "[::1]:5000", "[::1]"]
  ) {
    assert(isLoopback(r), r);
  }
  // A name that merely starts with 127. is another machine's.
  for (
    const r of ["127.registry.example:5000", "registry.example:5000", "10.0.0.1:5000", "ghcr.io"]
  ) {
    assert(!isLoopback(r), r);
  }
});
