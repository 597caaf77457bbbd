/**
 * The committed Debian bundle (bundles/substrate-debian.lock) is the operators' reference; the lab
 * tests carry a lock produced on their own machine instead (its digests are that machine's). So
 * that the committed lock cannot silently drift from what `deno task substrate` writes, its shape
 * (every image and step, apart from the images' digests) must be the one a fresh lock has:
 * `debianBundle`, the function scripts/substrate.ts writes the lock with, given the committed
 * lock's own image references. Cheap: nothing is built, no lab.
 */

import { assert, assertEquals } from "../support/assert.ts";
import { ROOT } from "../support/mod.ts";
import { lockShape, pinnedSubstrateImages } from "../support/substrate.ts";
import { debianBundle } from "../../scripts/substrate.ts";

/** The lines where two texts first differ, for a message a person can act on. */
function firstDifference(a: string, b: string): string {
  const x = a.split("\n");
  const y = b.split("\n");
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if (x[i] !== y[i]) return `line ${i + 1}:\n  committed: ${x[i]}\n  fresh:     ${y[i]}`;
  }
  return "no difference";
}

Deno.test("the committed debian lock has the shape a freshly produced one has, apart from digests", async () => {
  const path = `${ROOT}bundles/substrate-debian.lock`;
  const committed = await Deno.readTextFile(path);
  const images = await pinnedSubstrateImages(path);
  const named = (name: string) => {
    const found = images.filter((ref) => ref.split("@")[0]!.endsWith(`/${name}`));
    assertEquals(found.length, 1, `the committed lock pins ${name} ${found.length} times`);
    return found[0]!;
  };
  const fresh = JSON.stringify(
    debianBundle({
      store: named("mesh-postgres"),
      broker: named("mesh-rabbitmq"),
      control: named("mesh-control"),
    }),
    null,
    2,
  ) + "\n";
  const a = lockShape(committed);
  const b = lockShape(fresh);
  assert(
    a === b,
    `bundles/substrate-debian.lock is not what deno task substrate writes now (${
      firstDifference(a, b)
    }): run deno task substrate --registry 127.0.0.1:5000 and commit the lock`,
  );
});

Deno.test("lockShape tells digests apart from images and steps", () => {
  const lock = (image: string, id = "store") =>
    JSON.stringify({ declaration: { resources: [{ id, image }] } });
  const d = (c: string) => `@sha256:${c.repeat(64)}`;
  assertEquals(
    lockShape(lock(`127.0.0.1:5000/mesh-postgres${d("a")}`)),
    lockShape(lock(`127.0.0.1:5000/mesh-postgres${d("b")}`)),
  );
  assert(
    lockShape(lock(`127.0.0.1:5000/mesh-postgres${d("a")}`)) !==
      lockShape(lock(`127.0.0.1:5000/mesh-other${d("a")}`)),
  );
  assert(
    lockShape(lock(`127.0.0.1:5000/mesh-postgres${d("a")}`)) !==
      lockShape(lock(`127.0.0.1:5000/mesh-postgres${d("a")}`, "database")),
  );
});

Deno.test("no verify of the debian bundle makes a container: the node's drift check would see it", () => {
  // A verify runs at every apply of the first node's link. A `podman run` there is a short-lived
  // container the node's own drift check, run at that moment, finds undeclared (container/rogue):
  // seen in the lab fleet, whose convergence then flapped. Verifies ask running containers
  // (`podman exec`) instead; a `podman run` is for a command, run only when its verify fails.
  const bundle = debianBundle({ store: "s", broker: "b", control: "c" }) as {
    declaration: { resources: { id: string; verify?: string[] }[] };
  };
  const verifies = bundle.declaration.resources.filter((r) => r.verify !== undefined);
  assert(verifies.length >= 4, `only ${verifies.length} verifies`);
  for (const r of verifies) {
    const said = r.verify!.join(" ");
    assert(
      !/podman\s+(container\s+)?(run|create|start)\b/.test(said),
      `${r.id}'s verify makes a container: ${said}`,
    );
  }
});
