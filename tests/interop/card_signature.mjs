// The official A2A JS SDK's `verifyAgentCardSignature` (@a2a-js/sdk 1.x, with the `jose`
// library it uses) against fundi's agent card: the v1.0 card and the card served to a
// client that names no version verify against the keys fundi publishes at the card's
// `jku`; a card changed by one character does not.
//
// Usage: node card_signature.mjs BASE_URL

import * as jose from "jose";
import { verifyAgentCardSignature } from "@a2a-js/sdk";

const base = process.argv[2].replace(/\/$/, "");
const results = { passed: 0, failed: 0 };

function check(name, condition, detail = "") {
  results[condition ? "passed" : "failed"] += 1;
  console.log(`${condition ? "ok" : "FAILED"}: ${name}${condition ? "" : ` ${detail}`}`);
}

const verify = verifyAgentCardSignature(async (kid, jku) => {
  // Keys only from the card's own origin.
  if (!jku || !jku.startsWith(`${base}/`)) throw new Error(`a jku off the card's origin: ${jku}`);
  const { keys } = await (await fetch(jku)).json();
  return jose.importJWK(keys.find((k) => k.kid === kid), "EdDSA");
});

try {
  for (const [name, headers] of [["v1.0", { "A2A-Version": "1.0" }], ["unversioned", {}]]) {
    const card = await (await fetch(`${base}/.well-known/agent-card.json`, { headers })).json();
    let verified = true;
    try {
      await verify(card);
    } catch (error) {
      verified = String(error);
    }
    check(`the ${name} card's signature verifies with the SDK`, verified === true, verified);
    const changed = { ...card, description: `${card.description.slice(0, -1)}?` };
    let refused = false;
    try {
      await verify(changed);
    } catch {
      refused = true;
    }
    check(`the ${name} card changed by one character does not verify`, refused);
  }
} catch (error) {
  check("the script ran", false, String(error));
}
console.log(`${results.passed} passed, ${results.failed} failed`);
process.exit(results.failed ? 1 : 0);
