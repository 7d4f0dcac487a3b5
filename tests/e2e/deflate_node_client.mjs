// An observer on Node's ws (Debian's node-ws), which offers
// permessage-deflate by default: prints READY once joined, then one JSON
// line when the output holds the marker: the extensions agreed, the bytes
// its socket read, and the output (base64) since the join.
// Usage: node deflate_node_client.mjs URL TOKEN MARKER
import { createRequire } from "node:module";
import { randomBytes } from "node:crypto";

const require = createRequire(import.meta.url);
const WebSocket = require("/usr/share/nodejs/ws");
const [url, token, marker] = process.argv.slice(2);

function uuid7() {
  const b = randomBytes(16);
  const ms = BigInt(Date.now());
  for (let i = 0; i < 6; i++) b[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const ws = new WebSocket(url, ["pty-ws.v1"], { headers: { Authorization: "Bearer " + token } });
let wire = 0;
let joined = false;
const chunks = [];
ws.on("upgrade", (res) => res.socket.on("data", (d) => { wire += d.length; }));
ws.on("open", () => {
  ws.send(JSON.stringify({
    op: "pty.join_session", id: uuid7(), ts: new Date().toISOString(),
    payload: { role: "observer", client_label: "node" },
    extensions: ["https://agentic-sandbox.aiwg.io/extensions/pty-extensions/v1"],
  }));
});
ws.on("message", (data) => {
  const f = JSON.parse(data.toString());
  const kind = f.payload && f.payload.kind;
  if (f.op !== "pty.session_frame") return;
  if (kind === "Keyframe" && !joined) {
    joined = true;
    wire = 0;
    process.stdout.write("READY\n");
  } else if (kind === "Output" && joined) {
    chunks.push(Buffer.from(f.payload.data, "base64"));
    const out = Buffer.concat(chunks);
    if (out.includes(marker)) {
      process.stdout.write(JSON.stringify({
        extensions: ws.extensions, wire, output: out.toString("base64"),
      }) + "\n");
      ws.close(1000);
    }
  }
});
// No process.exit: it would cut a pipe's pending write of the result.
ws.on("error", (e) => {
  process.stderr.write(String(e) + "\n");
  process.exitCode = 2;
});
