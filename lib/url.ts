/**
 * URLs in messages: a password never printed.
 *
 * @module
 */

/** `url` with the password of its userinfo replaced by `***` (also when it does not parse). */
export function redactUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    // Not a URL: hide everything from the first ":" after the user name to the last "@", or
    // everything up to the last "@" when there is no "scheme://user:" to keep.
    const withUser = /^([a-z][a-z0-9+.-]*:\/\/[^/?#@:]*):[^]*@([^@]*)$/i.exec(url);
    if (withUser) return `${withUser[1]}:***@${withUser[2]}`;
    const at = url.lastIndexOf("@");
    return at < 0 ? url : `***${url.slice(at)}`;
  }
  if (u.host === "" && url.includes("@")) {
    // Parsed, but not as scheme://user:password@host (`amqp:/u:p@h`, `u:p@h`): whatever stands
    // between the scheme and the last "@" may be a credential.
    const scheme = /^[a-z][a-z0-9+.-]*:\/*/i.exec(url)?.[0] ?? "";
    return `${scheme}***${url.slice(url.lastIndexOf("@"))}`;
  }
  // A credential may also ride in the query (libpq's `?password=`, `?sslpassword=`).
  let search = u.search;
  if (search !== "") {
    const params = new URLSearchParams(u.search);
    for (const key of [...params.keys()]) {
      if (/pass|secret|token|key|auth/i.test(key)) params.set(key, "***");
    }
    search = `?${params.toString().replaceAll("%2A%2A%2A", "***")}`;
  }
  if (!u.username && !u.password && search === u.search) return url;
  const userinfo = u.username || u.password ? `${u.username}${u.password ? ":***" : ""}@` : "";
  return `${u.protocol}//${userinfo}${u.host}${u.pathname}${search}${u.hash}`;
}
