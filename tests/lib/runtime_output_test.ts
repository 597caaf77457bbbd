/**
 * The validators generated from the container runtimes' zod schemas
 * (lib/runtime_validators.js, by scripts/validators.ts from lib/runtime_schemas.ts) held to those schemas: a validator accepts exactly what
 * its schema accepts, and every field the schema keeps is in the output as it was (so a reader of
 * the fields gets the same values either way). Seeded mutations of valid outputs cover the near
 * misses; what a validator refuses is left to the schema, which says why.
 */

import { assert, assertEquals } from "../support/assert.ts";
import {
  checkOutput,
  isContainerInspect,
  isDockerInspect,
  isPodmanPs,
  type RuntimeOutput,
} from "../../lib/runtime_output.ts";
import { RUNTIME_SCHEMAS } from "../../lib/runtime_schemas.ts";
import { type Rng, rng } from "../support/rng.ts";

type Obj = Record<string, unknown>;

function podmanPs(r: Rng, i: number): Obj {
  const c: Obj = {
    Id: `id${i}`,
    Names: [`c${i}`],
    Image: "localhost/x:1",
    Labels: r.pick([null, {}, { a: "b", PODMAN_SYSTEMD_UNIT: "x.service" }]),
    Ports: r.pick([
      null,
      [],
      [{ host_ip: "", host_port: 8000 + i, container_port: 80, protocol: "tcp" }],
      [{ host_ip: "127.0.0.1", host_port: 9000, container_port: 90, range: 3, protocol: "udp" }],
    ]),
    State: r.pick(["running", "exited", "created"]),
    Pod: "",
  };
  if (r.chance(0.5)) c.ExitCode = r.pick([0, 1, 137]);
  if (r.chance(0.2)) delete c.Labels;
  if (r.chance(0.2)) delete c.Ports;
  return c;
}

function dockerInspect(r: Rng, i: number): Obj {
  return {
    Id: `id${i}`,
    Name: `/c${i}`,
    Config: { Image: "x:1", Labels: r.pick([null, {}, { a: "b" }]), Env: [] },
    State: r.chance(0.5) ? { Status: "running" } : { Status: "exited", ExitCode: 2 },
    NetworkSettings: {
      Ports: r.pick([null, {}, { "80/tcp": null }, {
        "80/tcp": [{ HostIp: "0.0.0.0", HostPort: "8080" }],
      }]),
    },
  };
}

/** The boot view's narrow answer (reconcile/observe/boot.ts), or the whole one the host reads. */
function containerInspect(r: Rng, i: number): Obj {
  const c: Obj = {
    Name: r.pick([`c${i}`, `/c${i}`]),
    State: { Status: r.pick(["running", "exited"]) },
    HostConfig: {
      RestartPolicy: r.pick([null, { Name: "" }, { Name: "always", MaximumRetryCount: 0 }]),
    },
    Config: { Labels: r.pick([null, {}, { PODMAN_SYSTEMD_UNIT: "u.service" }]) },
  };
  if (r.chance(0.5)) {
    Object.assign(c, { Id: `id${i}`, RestartCount: r.pick([0, 3]) });
    Object.assign(c.State as Obj, {
      Running: r.chance(0.5),
      Paused: false,
      Restarting: false,
      ExitCode: r.pick([0, 137]),
      Error: r.pick(["", "oci runtime error"]),
    });
    Object.assign(c.Config as Obj, { Image: "x@sha256:00", Env: r.pick([null, [], ["A=b"]]) });
  }
  return c;
}

const BAD_VALUES: unknown[] = [
  null,
  undefined,
  0,
  -1,
  1.5,
  2 ** 60,
  "",
  "x",
  "80",
  true,
  [],
  [1],
  ["x"],
  [null],
  {},
  { Name: 1 },
  { a: 1 },
  { a: "b" },
  [{ HostIp: "", HostPort: 80 }],
  [{ host_ip: "", host_port: 1, container_port: 1, protocol: "tcp" }],
];

/** Every object inside `value`, itself included. */
function objects(value: unknown, out: Obj[] = []): Obj[] {
  if (Array.isArray(value)) { for (const v of value) objects(v, out); }
  else if (typeof value === "object" && value !== null) {
    out.push(value as Obj);
    for (const v of Object.values(value)) objects(v, out);
  }
  return out;
}

function mutate(r: Rng, data: Obj[]): void {
  const all = objects(data);
  if (all.length === 0) return;
  const target = r.pick(all);
  const keys = Object.keys(target);
  switch (r.int(3)) {
    case 0:
      if (keys.length > 0) target[r.pick(keys)] = structuredClone(r.pick(BAD_VALUES));
      break;
    case 1:
      if (keys.length > 0) delete target[r.pick(keys)];
      break;
    default:
      // An own "__proto__" too, as JSON.parse makes it (a label of that name is podman's to allow).
      Object.defineProperty(target, r.pick(["x", "range", "ExitCode", "Labels", "Ports", PROTO]), {
        value: structuredClone(r.pick(BAD_VALUES)),
        enumerable: true,
        writable: true,
        configurable: true,
      });
  }
}

const PROTO = "__proto__";

/** Whether every value `kept` holds is in `raw` as it is there (what the schema kept of it). */
function within(kept: unknown, raw: unknown): boolean {
  if (Array.isArray(kept)) {
    return Array.isArray(raw) && kept.length === raw.length &&
      kept.every((v, i) => within(v, raw[i]));
  }
  if (typeof kept === "object" && kept !== null) {
    if (typeof raw !== "object" || raw === null) return false;
    return Object.entries(kept).every(([k, v]) => within(v, (raw as Obj)[k]));
  }
  return Object.is(kept, raw);
}

/**
 * The records of the schema's value `kept` (each output's `Labels`, docker's
 * `NetworkSettings.Ports`) beside the same record of `raw`, the data it was read from.
 */
function records(kept: unknown, raw: unknown): [Obj, Obj][] {
  const out: [Obj, Obj][] = [];
  const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null;
  (kept as unknown[]).forEach((c, i) => {
    const r = (raw as Obj[])[i]!;
    const pairs: [unknown, unknown][] = [
      [(c as Obj).Labels, r.Labels],
      [((c as Obj).Config as Obj | undefined)?.Labels, (r.Config as Obj | undefined)?.Labels],
      [
        ((c as Obj).NetworkSettings as Obj | undefined)?.Ports,
        (r.NetworkSettings as Obj | undefined)?.Ports,
      ],
    ];
    for (const [k, g] of pairs) if (isObj(k) && isObj(g)) out.push([k, g]);
  });
  return out;
}

const PLAIN: Record<RuntimeOutput, (data: unknown) => boolean> = {
  "podman ps": isPodmanPs,
  "docker inspect": isDockerInspect,
  "container inspect": isContainerInspect,
};

const CASES: [RuntimeOutput, (r: Rng, i: number) => Obj, (data: unknown) => boolean][] = [
  ["podman ps", podmanPs, isPodmanPs],
  ["docker inspect", dockerInspect, isDockerInspect],
  ["container inspect", containerInspect, isContainerInspect],
];

for (const [what, make, plain] of CASES) {
  Deno.test(`${what}: the generated validator accepts exactly what the schema accepts, fields kept`, async () => {
    const seed = Number(Deno.env.get("MESH_FUZZ_SEED") ?? 16);
    const r = rng(seed);
    let fast = 0;
    let refused = 0;
    for (let n = 0; n < 3000; n++) {
      const data = Array.from({ length: 1 + r.int(3) }, (_, i) => structuredClone(make(r, i)));
      const mutations = n % 4 === 0 ? 0 : 1 + r.int(2);
      for (let m = 0; m < mutations; m++) mutate(r, data);
      const text = JSON.stringify(data);
      const raw = JSON.parse(text);
      const want = RUNTIME_SCHEMAS[what].safeParse(JSON.parse(text));
      if (!want.success) refused++;
      const where = `seed ${seed}, input ${n}: ${text}`;
      assert(plain(raw) === want.success, `the validator and the schema disagree: ${where}`);
      if (!plain(raw)) continue;
      fast++;
      assert(within(want.data, raw), `a field the schema keeps differs: ${where}`);
      // A record (labels, docker's ports) is kept whole: its keys are the schema's fields.
      for (const [kept, given] of records(want.data, raw)) {
        assertEquals(Object.keys(kept), Object.keys(given), `a record's keys differ: ${where}`);
      }
      assert((await checkOutput(what, raw)) === raw, where);
    }
    assert(fast > 500 && refused > 500, `fast ${fast}, refused ${refused}`);
  });
}

Deno.test("an output the validator refuses is the schema's to judge: its first problem", async () => {
  let error: unknown;
  try {
    await checkOutput("podman ps", [{ Id: 1 }]);
  } catch (e) {
    error = e;
  }
  assert(String(error).includes("expected string"), String(error));
});

Deno.test("a label named __proto__ (podman allows it) is data to both readers, its value checked", async () => {
  const outputs: [RuntimeOutput, (labels: string) => string][] = [
    ["podman ps", (l) => `[{"Id":"i","Names":["c"],"Image":"x","Labels":${l},"State":"running"}]`],
    [
      "docker inspect",
      (l) =>
        `[{"Id":"i","Name":"/c","Config":{"Image":"x","Labels":${l}},"State":{"Status":"running"},` +
        `"NetworkSettings":{"Ports":null}}]`,
    ],
    [
      "container inspect",
      (l) => `[{"Name":"c","State":{"Status":"running"},"HostConfig":{},"Config":{"Labels":${l}}}]`,
    ],
  ];
  const labelsOf = (value: unknown): Obj => {
    const c = (value as Obj[])[0]!;
    return (c.Labels ?? (c.Config as Obj).Labels) as Obj;
  };
  for (const [what, output] of outputs) {
    // Kept, in its place, by the validator's reader and by the schema alike.
    const text = output('{"a":"b","__proto__":"x","c":"d"}');
    assert(PLAIN[what](JSON.parse(text)), `${what}: the validator refuses ${text}`);
    const parsed = RUNTIME_SCHEMAS[what].safeParse(JSON.parse(text));
    assert(parsed.success, `${what}: the schema refuses ${text}`);
    for (
      const labels of [labelsOf(await checkOutput(what, JSON.parse(text))), labelsOf(parsed.data)]
    ) {
      assertEquals(Object.keys(labels), ["a", "__proto__", "c"], `${what}: ${text}`);
      assertEquals(labels.__proto__, "x", `${what}: ${text}`);
      assertEquals(Object.getPrototypeOf(labels), Object.prototype, `${what}: ${text}`);
    }
    // A value that is not a string refused by both, the schema naming the label.
    const bad = output('{"a":"b","__proto__":5}');
    assert(!PLAIN[what](JSON.parse(bad)), `${what}: the validator accepts ${bad}`);
    const refused = RUNTIME_SCHEMAS[what].safeParse(JSON.parse(bad));
    assert(!refused.success, `${what}: the schema accepts ${bad}`);
    assertEquals(refused.error.issues[0]?.path.slice(-2), ["Labels", "__proto__"], bad);
    const error = await checkOutput(what, JSON.parse(bad)).then(() => undefined, (e) => e);
    assert(error instanceof Error, `${what}: checkOutput accepts ${bad}`);
  }
});
