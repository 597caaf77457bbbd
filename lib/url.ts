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
  if (!u.username && !u.password) return url;
  const userinfo = `${u.username}${u.password ? ":***" : ""}@`;
  return `${u.protocol}//${userinfo}${u.host}${u.pathname}${u.search}${u.hash}`;
}
