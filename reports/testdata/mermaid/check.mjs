import { JSDOM } from 'jsdom';
import fs from 'fs';
const dom = new JSDOM('<!doctype html><html><body></body></html>');
globalThis.window = dom.window; globalThis.document = dom.window.document;
try { globalThis.navigator = dom.window.navigator; } catch {}
globalThis.Element = dom.window.Element; globalThis.HTMLElement = dom.window.HTMLElement;
const mermaid = (await import('mermaid')).default;
mermaid.initialize({ startOnLoad: false });
let bad = 0, n = 0;
for (const f of process.argv.slice(2)) {
  const md = fs.readFileSync(f, 'utf8');
  const re = /```mermaid\n([\s\S]*?)\n```/g; let m;
  while ((m = re.exec(md))) {
    n++;
    try { await mermaid.parse(m[1]); }
    catch (e) { bad++; console.log(f, 'diagram', n, 'ERROR', String(e.message || e).slice(0, 400)); }
  }
}
console.log('diagrams', n, 'bad', bad);
