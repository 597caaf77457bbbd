/**
 * The test CA and the certificates of this machine's TLS listeners (docs/testing.md, "TLS"), made
 * by the mesh's own CA library (lib/mesh_ca.ts), for scripts/bootstrap.sh:
 *
 * ```
 * DIR/ca.crt                  the test CA's certificate (0644)
 * DIR/secrets/ca.key          its key (0600)
 * DIR/rabbitmq/server.crt     RabbitMQ's AMQPS (5671) and management HTTPS (15671) certificate
 * DIR/rabbitmq/server.key     (0600; bootstrap.sh gives both to the rabbitmq user)
 * DIR/postgresql/server.crt   PostgreSQL's certificate
 * DIR/postgresql/server.key   (0600; bootstrap.sh gives both to the postgres user)
 * ```
 *
 * Server certificates are for `localhost` and `127.0.0.1`. Safe to run again: a CA or a
 * certificate is made only when missing, unreadable, due for renewal (lib/mesh_ca.ts's
 * `renewalReason`), or (a server certificate) not issued by the CA in DIR. Prints `changed` on
 * stdout when it wrote anything (the listeners must then read their files again), `unchanged`
 * otherwise; says on stderr what it made and why.
 *
 * Usage: `deno run -A scripts/test_tls.ts [DIR]` (default /etc/mesh-test).
 *
 * @module
 */

import {
  createCa,
  describeCert,
  issueServerCert,
  readCaCert,
  readSecretKey,
  renewalReason,
} from "../lib/mesh_ca.ts";
import { messageOf, writeFileAtomic } from "../lib/atomic.ts";
import { readCertificate } from "../lib/mesh_ca.ts";

/** The names every test listener's certificate is issued for. */
export const TEST_NAMES = ["localhost", "127.0.0.1"];
/** The services whose certificates are made, each in a directory of its name. */
export const TEST_SERVICES = ["rabbitmq", "postgresql"];

/**
 * Makes what is missing or due in `dir` (see the module's documentation).
 *
 * @returns what was made, one line each (empty when nothing was).
 */
export async function ensureTestTls(dir: string): Promise<string[]> {
  const made: string[] = [];
  await Deno.mkdir(`${dir}/secrets`, { recursive: true, mode: 0o700 });
  await Deno.chmod(`${dir}/secrets`, 0o700);
  let ca: { certPem: string; keyPem: string } | undefined;
  let why: string | undefined;
  try {
    ca = {
      certPem: await readCaCert(`${dir}/ca.crt`),
      keyPem: await readSecretKey(`${dir}/secrets/ca.key`),
    };
    why = renewalReason(ca.certPem);
  } catch (error) {
    why = messageOf(error);
  }
  if (ca === undefined || why !== undefined) {
    ca = await createCa({ name: `mesh test CA ${crypto.randomUUID().slice(0, 8)}` });
    await writeFileAtomic(`${dir}/secrets/ca.key`, ca.keyPem, { mode: 0o600 });
    await writeFileAtomic(`${dir}/ca.crt`, ca.certPem, { mode: 0o644 });
    made.push(`made the test CA ${dir}/ca.crt (${why})`);
  }
  const caSubject = describeCert(ca.certPem).subject;
  for (const service of TEST_SERVICES) {
    const at = `${dir}/${service}`;
    await Deno.mkdir(at, { recursive: true, mode: 0o755 });
    let reason: string | undefined;
    try {
      const pem = await readCertificate(`${at}/server.crt`, "server certificate");
      reason = renewalReason(pem, { names: TEST_NAMES });
      if (reason === undefined && describeCert(pem).issuer !== caSubject) {
        reason = `it is not issued by ${caSubject}`;
      }
      if (reason === undefined) await readSecretKey(`${at}/server.key`);
    } catch (error) {
      reason = messageOf(error);
    }
    if (reason === undefined) continue;
    const pair = await issueServerCert(ca, { names: TEST_NAMES });
    await writeFileAtomic(`${at}/server.key`, pair.keyPem, { mode: 0o600 });
    await writeFileAtomic(`${at}/server.crt`, pair.certPem, { mode: 0o644 });
    made.push(`issued ${at}/server.crt for ${TEST_NAMES.join(", ")} (${reason})`);
  }
  return made;
}

if (import.meta.main) {
  const dir = Deno.args[0] ?? "/etc/mesh-test";
  const made = await ensureTestTls(dir);
  for (const line of made) console.error(`test_tls: ${line}`);
  console.log(made.length > 0 ? "changed" : "unchanged");
}
