/**
 * reconcile/repo_seen.ts: the first-seen state file, its records' keys named `__proto__` (as
 * JSON.parse makes them) refused at their place, never dropped unread.
 */

import { assert, assertEquals, assertRejects } from "../support/assert.ts";
import { loadRepoSeen, saveRepoSeen } from "../../reconcile/repo_seen.ts";

const COMMIT = "a".repeat(40);
const TIME = "2026-01-02T03:04:05.000Z";

Deno.test("first-seen state: a repository or a commit named __proto__ is an error at its key, never forgotten", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/repo-seen.json`;
    await saveRepoSeen(path, { "/srv/repo": { [COMMIT]: Date.parse(TIME) } });
    assertEquals(await loadRepoSeen(path), { "/srv/repo": { [COMMIT]: Date.parse(TIME) } });
    const cases: [string, string][] = [
      [
        `{"/srv/repo":{"${COMMIT}":"${TIME}"},"__proto__":{"${COMMIT}":"${TIME}"}}`,
        "repos.__proto__",
      ],
      [
        `{"/srv/repo":{"${COMMIT}":"${TIME}","__proto__":"${TIME}"}}`,
        'repos["/srv/repo"].__proto__',
      ],
    ];
    for (const [repos, at] of cases) {
      await Deno.writeTextFile(path, `{"version":1,"repos":${repos}}`);
      const error = await assertRejects(() => loadRepoSeen(path), Error);
      assert(error.message.includes(`${at}: `), `${at}: ${error.message}`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
