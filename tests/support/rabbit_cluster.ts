/**
 * Test support: a RabbitMQ cluster of real `rabbitmq-server` nodes on this machine, next to the
 * machine's own broker (rabbit@localhost on 5672/15672), which is never touched: each member has
 * its own node name, AMQP, distribution and management ports, data and log directories, config
 * and enabled-plugins files, and a HOME holding the cluster's own Erlang cookie (so the CLI tools
 * talk only to these nodes). Members after the first join it with `rabbitmqctl join_cluster`.
 * Everything is stopped and removed by {@linkcode RabbitCluster.remove}.
 *
 * @module
 */

import { run } from "../../lib/command.ts";

const BIN = "/usr/lib/rabbitmq/bin";

/** One member of the cluster. */
export interface Member {
  /** The Erlang node name, e.g. `mesht1a@localhost`. */
  node: string;
  amqpPort: number;
  apiPort: number;
  /** `amqp://guest:guest@127.0.0.1:PORT` (guest may log in from loopback only). */
  url: string;
  /** `http://guest:guest@127.0.0.1:PORT`. */
  api: string;
}

/** A running cluster. */
export interface RabbitCluster {
  members: Member[];
  /** Every member's AMQP URL, in order. */
  urls: string[];
  /** Stops a member's RabbitMQ application and Erlang node (the data stays for a restart). */
  stop(member: Member): Promise<void>;
  /** Starts a stopped member again and waits until it runs. */
  start(member: Member): Promise<void>;
  /** The member that leads the quorum queue `queue` (from the management API of `via`). */
  leaderOf(queue: string, via?: Member): Promise<Member>;
  /** Runs `rabbitmqctl` against `member`. */
  ctl(member: Member, args: string[]): Promise<string>;
  /** Stops every member and removes their directories. */
  remove(): Promise<void>;
}

/** Options for {@linkcode startRabbitCluster}. */
export interface ClusterOptions {
  /** How many members (default 3). */
  members?: number;
  /** First port of the range used (each member takes 10 from it; default a random range). */
  basePort?: number;
  /**
   * Feature flags enabled when a member first boots (`RABBITMQ_FEATURE_FLAGS`); default all.
   * An empty list leaves out quorum queues, as an older broker or another AMQP broker would.
   */
  featureFlags?: string[];
}

/**
 * Starts a cluster of `members` nodes and clusters them. Ports are `basePort + 10 * i + {0: AMQP,
 * 1: management, 2: distribution}`.
 *
 * @throws the failed command (with its stderr) when a member does not start or join; whatever
 *   started is removed first.
 */
export async function startRabbitCluster(options: ClusterOptions = {}): Promise<RabbitCluster> {
  const count = options.members ?? 3;
  const base = options.basePort ?? 26000 + Math.floor(Math.random() * 100) * 30;
  const tag = `mesht${crypto.randomUUID().slice(0, 6).replace(/[^a-z0-9]/g, "x")}`;
  const dir = await Deno.makeTempDir({ prefix: `mesh-rabbit-${tag}-` });
  const cookie = crypto.randomUUID().replaceAll("-", "").toUpperCase();
  await Deno.writeTextFile(`${dir}/.erlang.cookie`, cookie, { mode: 0o600 });
  await Deno.chmod(`${dir}/.erlang.cookie`, 0o600);
  await Deno.writeTextFile(`${dir}/env.conf`, "");
  await Deno.writeTextFile(`${dir}/enabled_plugins`, "[rabbitmq_management].\n");
  const members: Member[] = [];
  const processes = new Map<string, Deno.ChildProcess>();
  for (let i = 0; i < count; i++) {
    const amqpPort = base + 10 * i, apiPort = amqpPort + 1;
    const node = `${tag}${String.fromCharCode(97 + i)}@localhost`;
    members.push({
      node,
      amqpPort,
      apiPort,
      url: `amqp://guest:guest@127.0.0.1:${amqpPort}`,
      api: `http://guest:guest@127.0.0.1:${apiPort}`,
    });
    await Deno.writeTextFile(
      `${dir}/${node}.conf`,
      `listeners.tcp.default = 127.0.0.1:${amqpPort}\nmanagement.tcp.ip = 127.0.0.1\n` +
        `management.tcp.port = ${apiPort}\nloopback_users.guest = true\n` +
        // Statistics every second, so the management API's leader and counts are fresh.
        `collect_statistics_interval = 1000\n`,
    );
  }
  const env = (m: Member): Record<string, string> => ({
    HOME: dir,
    RABBITMQ_CONF_ENV_FILE: `${dir}/env.conf`,
    RABBITMQ_NODENAME: m.node,
    RABBITMQ_NODE_PORT: String(m.amqpPort),
    RABBITMQ_DIST_PORT: String(m.amqpPort + 2),
    RABBITMQ_CONFIG_FILE: `${dir}/${m.node}`,
    RABBITMQ_ENABLED_PLUGINS_FILE: `${dir}/enabled_plugins`,
    RABBITMQ_MNESIA_BASE: `${dir}/mnesia`,
    RABBITMQ_LOG_BASE: `${dir}/log`,
    ERL_EPMD_ADDRESS: "127.0.0.1",
    ...(options.featureFlags !== undefined
      ? { RABBITMQ_FEATURE_FLAGS: options.featureFlags.join(",") }
      : {}),
  });
  const ctl = async (m: Member, args: string[]) =>
    (await run([`${BIN}/rabbitmqctl`, "-n", m.node, ...args], {
      env: { HOME: dir, RABBITMQ_CONF_ENV_FILE: `${dir}/env.conf` },
    })).stdout;
  const start = async (m: Member) => {
    const child = new Deno.Command(`${BIN}/rabbitmq-server`, {
      env: env(m),
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    processes.set(m.node, child);
    let exited: Deno.CommandStatus | undefined;
    child.status.then((s) => exited = s);
    // The node registers with epmd a moment after the VM starts: until then the CLI cannot
    // reach it at all, and await_startup fails at once.
    for (let attempt = 1;; attempt++) {
      try {
        await ctl(m, ["await_startup", "--timeout", "120"]);
        return;
      } catch (error) {
        if (exited !== undefined) {
          throw new Error(`RabbitMQ node ${m.node} exited (${exited.code}); see ${dir}/log`);
        }
        if (attempt >= 120) throw error;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  };
  const stop = async (m: Member) => {
    await ctl(m, ["stop"]).catch(() => {});
    const child = processes.get(m.node);
    if (child !== undefined) {
      try {
        child.kill("SIGTERM");
      } catch { /* gone */ }
      await child.status;
      processes.delete(m.node);
    }
  };
  const remove = async () => {
    for (const m of members) await stop(m);
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  try {
    await Promise.all(members.map(start));
    for (const m of members.slice(1)) {
      await ctl(m, ["stop_app"]);
      await ctl(m, ["join_cluster", members[0]!.node]);
      await ctl(m, ["start_app"]);
      await ctl(m, ["await_startup", "--timeout", "120"]);
    }
  } catch (error) {
    await remove();
    throw error;
  }
  return {
    members,
    urls: members.map((m) => m.url),
    stop,
    start,
    ctl,
    remove,
    async leaderOf(queue, via) {
      const alive = via ?? members.find((m) => processes.has(m.node))!;
      const u = new URL(alive.api);
      for (let i = 0; i < 100; i++) {
        const response = await fetch(
          `http://127.0.0.1:${u.port}/api/queues/%2F/${encodeURIComponent(queue)}`,
          { headers: { authorization: `Basic ${btoa("guest:guest")}` } },
        );
        const body = await response.json() as { leader?: string; node?: string };
        const leader = body.leader ?? body.node;
        const found = members.find((m) => m.node === leader);
        if (found !== undefined) return found;
        await new Promise((r) => setTimeout(r, 200));
      }
      throw new Error(`No leader known for queue "${queue}"`);
    },
  };
}
