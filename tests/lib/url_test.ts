import { assertEquals } from "../support/assert.ts";
import { redactUrl } from "../../lib/url.ts";

Deno.test("redactUrl hides a password in the userinfo and in the query, and nothing else", () => {
  assertEquals(
    redactUrl("amqp://web1:s3cret@127.0.0.1:5672/%2F"),
    "amqp://web1:***@127.0.0.1:5672/%2F",
  );
  assertEquals(
    redactUrl("postgres://u@db:5432/inventory?password=s3cret&sslmode=require"),
    "postgres://u@db:5432/inventory?password=***&sslmode=require",
  );
  assertEquals(redactUrl("postgres://db/inventory"), "postgres://db/inventory");
  assertEquals(redactUrl("http://guest@127.0.0.1:15672/"), "http://guest@127.0.0.1:15672/");
  // Not a URL: the part that may be a password is hidden all the same.
  assertEquals(redactUrl("amqp://web1:s3cret with space@host"), "amqp://web1:***@host");
  // Parsed, but with no host: the credential is still hidden.
  assertEquals(redactUrl("amqp:/guest:S3cret@127.0.0.1:5672/x"), "amqp:/***@127.0.0.1:5672/x");
  assertEquals(redactUrl("guest:S3cret@127.0.0.1"), "guest:***@127.0.0.1");
});
