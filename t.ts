import { observeProxy, probeAddress } from "./reconcile/observe/proxy.ts";
const o = await observeProxy("localhost:12019");
console.log(JSON.stringify(o));
for (const a of o.addresses) console.log(await probeAddress(a));
console.log(JSON.stringify(await observeProxy("localhost:12999")));
