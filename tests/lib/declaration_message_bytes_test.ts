/**
 * `declarationMessageBytes`, by which the control plane renders no declaration whose message would
 * be larger than a node's link takes (`MAX_DECLARATION_MESSAGE_BYTES`, control/inventory.ts; the
 * link refuses one from its header, tests/host/link_test.ts), is never below what is sent. (A
 * render refused by it needs a module of over 32 MiB: 29 s here, too slow for the suite.)
 */

import { assert, assertEquals } from "../support/assert.ts";
import { type DeclarationMessage, declarationMessageBytes } from "../../lib/broker.ts";

Deno.test("declarationMessageBytes: never below the message sent, and equal at the extremes", () => {
  const texts = [
    "",
    '{"version":1,"resources":[]}',
    'quotes " and backslashes \\ and \\" and a newline\n and a tab\t',
    "control \u0000\u0001\u001f and DEL \u007f",
    "accents é ü, CJK 漢字, an emoji 🙂, a lone surrogate \ud800 and \udc00 alone",
    "x".repeat(100_000),
  ];
  for (const node of ["a", "n-" + "z".repeat(61)]) {
    for (const text of texts) {
      const bound = declarationMessageBytes(node, text);
      const sent = (generation: number, pushedAt: string) => {
        const message: DeclarationMessage = {
          kind: "declaration",
          node,
          generation,
          digest: `sha256:${"a".repeat(64)}`,
          pushedAt,
          epoch: crypto.randomUUID(),
          declaration: text,
          // Signed, with a key handoff (lib/signing.ts): each of its one length.
          keyId: `ed25519:${"0".repeat(32)}`,
          signature: `${"A".repeat(86)}==`,
          handoff: {
            from: `ed25519:${"0".repeat(32)}`,
            to: `ed25519:${"1".repeat(32)}`,
            key: "A".repeat(59) + "=",
            signature: `${"B".repeat(86)}==`,
          },
        };
        return new TextEncoder().encode(JSON.stringify(message)).length;
      };
      assert(sent(1, new Date().toISOString()) <= bound, JSON.stringify(text.slice(0, 40)));
      assertEquals(sent(Number.MAX_SAFE_INTEGER, "+275760-09-13T00:00:00.000Z"), bound);
    }
  }
});
