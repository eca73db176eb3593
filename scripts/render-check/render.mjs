// render.mjs renders Markdown reports the way GitHub shows them and measures
// what a reviewer sees: pandoc turns each file into HTML as GitHub-flavoured
// Markdown, the page gets GitHub's column (1012 px of content in a 1400 px
// window) and a stylesheet close to GitHub's, the `mermaid` package draws
// every ```mermaid block, and headless Chromium (Debian's, driven by
// puppeteer-core) lays it out. It writes screenshots and a summary into the
// output directory and exits 1 when a diagram does not parse or renders
// below the minimum scale, when an internal link leads nowhere, or when the
// page as first seen (<details> folded unless the report opens them) is
// taller than the maximum. Run it through ../render-check.sh, which installs
// what it needs.
//
//	node render.mjs --out DIR [--min-scale 0.7] [--max-height 8000] [--no-screens] report.md...
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import puppeteer from 'puppeteer-core';

const here = path.dirname(fileURLToPath(import.meta.url));

// What GitHub gives a Markdown file at a 1400 px window: a content column
// of 1012 px. A screen is what a reviewer sees at once.
const WINDOW = 1400;
const COLUMN = 1012;
const SCREEN = 1000;

function usage(msg) {
  if (msg) console.error(`render-check: ${msg}`);
  console.error('usage: node render.mjs --out DIR [--min-scale 0.7] [--max-height PX] [--no-screens] report.md...');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { out: '', minScale: 0.7, maxHeight: 0, screens: true, files: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--out') o.out = val();
    else if (a === '--min-scale') o.minScale = Number(val());
    else if (a === '--max-height') o.maxHeight = Number(val());
    else if (a === '--no-screens') o.screens = false;
    else if (a.startsWith('-')) usage(`unknown flag ${a}`);
    else o.files.push(a);
  }
  if (!o.out) usage('--out is required');
  if (o.files.length === 0) usage('no report given');
  if (!(o.minScale > 0 && o.minScale <= 1)) usage('--min-scale must be in (0, 1]');
  if (!(o.maxHeight >= 0)) usage('--max-height must be a number of pixels');
  return o;
}

// A stylesheet close to GitHub's markdown-body (sizes, table cells, code
// blocks, headings); fonts resolve to Liberation Sans and DejaVu Sans Mono
// on Debian, whose widths are those of Arial and close to GitHub's.
const CSS = `
body { margin: 0; background: #fff; color: #1f2328;
  font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif;
  font-size: 16px; line-height: 1.5; }
.markdown-body { box-sizing: content-box; width: ${COLUMN}px; margin: 0 auto; padding: 32px; }
.markdown-body h1, .markdown-body h2 { padding-bottom: .3em; border-bottom: 1px solid #d1d9e0; }
.markdown-body h1 { font-size: 2em; margin: .67em 0; }
.markdown-body h2 { font-size: 1.5em; margin: 24px 0 16px; }
.markdown-body h3 { font-size: 1.25em; margin: 24px 0 16px; }
.markdown-body h4 { font-size: 1em; margin: 24px 0 16px; }
.markdown-body p, .markdown-body ul, .markdown-body ol, .markdown-body table, .markdown-body pre,
.markdown-body blockquote, .markdown-body details { margin: 0 0 16px; }
.markdown-body ul, .markdown-body ol { padding-left: 2em; }
.markdown-body li + li { margin-top: .25em; }
.markdown-body blockquote { padding: 0 1em; color: #59636e; border-left: .25em solid #d1d9e0; }
.markdown-body code { font-family: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "Liberation Mono", monospace;
  font-size: 85%; padding: .2em .4em; background: rgba(129,139,152,.12); border-radius: 6px; }
.markdown-body pre { padding: 16px; overflow: auto; font-size: 85%; line-height: 1.45; background: #f6f8fa; border-radius: 6px; }
.markdown-body pre code { font-size: 100%; padding: 0; background: transparent; }
.markdown-body table { display: block; width: max-content; max-width: 100%; overflow: auto; border-spacing: 0; border-collapse: collapse; }
.markdown-body th, .markdown-body td { padding: 6px 13px; border: 1px solid #d1d9e0; }
.markdown-body th { font-weight: 600; }
.markdown-body tr:nth-child(2n) { background: #f6f8fa; }
.markdown-body a { color: #0969da; text-decoration: underline; text-underline-offset: .2rem; }
.markdown-body summary { cursor: pointer; }
.markdown-body .mermaid-box { margin: 0 0 16px; }
`;

function page(title, body, mermaidURL) {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title><style>${CSS}</style>
<script src="${mermaidURL}"></script>
<script>mermaid.initialize({ startOnLoad: false, securityLevel: 'strict' });</script></head>
<body><article class="markdown-body">${body}</article></body></html>`;
}

// inPage runs in the browser: draws every diagram, then measures. Each
// diagram is parsed and rendered on its own, so that one error names its
// diagram; the SVG is inserted as GitHub shows it (useMaxWidth: at most the
// column wide, scaled down when wider).
async function inPage(column) {
  /* global mermaid, document */
  mermaid.initialize({ startOnLoad: false, securityLevel: 'strict' });
  const heading = (el) => {
    // The nearest heading before el, in document order.
    const all = [...document.querySelectorAll('h1, h2, h3, h4')];
    let last = '';
    for (const h of all) {
      if (h.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) last = h.textContent.replace(/\s+/g, ' ').trim();
    }
    return last;
  };
  const diagrams = [];
  const blocks = [...document.querySelectorAll('pre.mermaid')];
  for (let i = 0; i < blocks.length; i++) {
    const pre = blocks[i];
    const src = pre.textContent;
    const box = document.createElement('div');
    box.className = 'mermaid-box';
    box.id = `diagram-${i + 1}`;
    pre.replaceWith(box);
    const d = { index: i + 1, heading: heading(box), error: '' };
    try {
      await mermaid.parse(src);
      const { svg } = await mermaid.render(`m${i + 1}`, src);
      box.innerHTML = svg;
    } catch (e) {
      d.error = String((e && e.message) || e).replace(/\s+/g, ' ').slice(0, 300);
      box.textContent = `Mermaid error: ${d.error}`;
    }
    diagrams.push(d);
  }
  // Measure with every <details> as a reader first sees it: folded. A
  // diagram inside a folded <details> is measured once opened.
  for (const d of diagrams) {
    const box = document.getElementById(`diagram-${d.index}`);
    const svg = box.querySelector('svg');
    if (!svg) continue;
    const closed = [];
    for (let p = box.parentElement; p; p = p.parentElement) {
      if (p.tagName === 'DETAILS' && !p.open) { p.open = true; closed.push(p); }
    }
    const vb = svg.viewBox && svg.viewBox.baseVal;
    const natural = vb && vb.width ? vb.width : svg.getBBox().width;
    const r = svg.getBoundingClientRect();
    d.natural = Math.round(natural);
    d.width = Math.round(r.width);
    d.height = Math.round(r.height);
    d.scale = Math.round((r.width / natural) * 1000) / 1000;
    d.folded = closed.length > 0;
    for (const p of closed) p.open = false;
  }
  const article = document.querySelector('.markdown-body');
  const height = () => Math.round(article.getBoundingClientRect().height);
  const details = [...document.querySelectorAll('details')];
  const initial = details.map((x) => x.open);
  // As a reader first sees it: <details> folded, except those the
  // author opened (<details open>); then all folded; then all open.
  const seen = height();
  // Height of each top-level section (## heading) as first seen.
  const top = article.getBoundingClientRect().top;
  const h2 = [...article.querySelectorAll('h1, h2')];
  const sections = h2.map((h, i) => {
    const y = h.getBoundingClientRect().top - top;
    const next = i + 1 < h2.length ? h2[i + 1].getBoundingClientRect().top - top : seen;
    return { heading: h.textContent.replace(/\s+/g, ' ').trim(), height: Math.round(next - y) };
  });
  details.forEach((x) => { x.open = false; });
  const folded = height();
  details.forEach((x) => { x.open = true; });
  const expanded = height();
  // What overflows the column (GitHub scrolls it sideways: a reviewer sees
  // it cut), measured expanded.
  const overflow = [];
  for (const el of article.querySelectorAll('table, pre')) {
    if (el.scrollWidth > el.clientWidth + 1) {
      overflow.push({ what: el.tagName.toLowerCase(), heading: heading(el), width: el.scrollWidth, column });
    }
  }
  details.forEach((x, i) => { x.open = initial[i]; });
  const tables = article.querySelectorAll('table').length;
  const links = [...article.querySelectorAll('a[href^="#"]')].map((a) => a.getAttribute('href').slice(1));
  const ids = new Set([...article.querySelectorAll('[id]')].map((x) => x.id));
  const broken = [...new Set(links.filter((l) => !ids.has(decodeURIComponent(l))))];
  return { diagrams, sections, seen, folded, expanded, details: details.length, opened: initial.filter(Boolean).length, tables, overflow, links: links.length, broken };
}

async function checkOne(browser, file, o) {
  const name = path.basename(file).replace(/\.md$/, '');
  const dir = path.join(o.out, name);
  fs.mkdirSync(dir, { recursive: true });
  const body = execFileSync('pandoc', ['-f', 'gfm', '-t', 'html5', '--wrap=none', file], { encoding: 'utf8', maxBuffer: 256 << 20 });
  const mermaidURL = pathToFileURL(path.join(here, 'node_modules', 'mermaid', 'dist', 'mermaid.min.js')).href;
  const html = path.join(dir, `${name}.html`);
  fs.writeFileSync(html, page(name, body, mermaidURL));

  const tab = await browser.newPage();
  const consoleErrors = [];
  tab.on('pageerror', (e) => consoleErrors.push(String(e)));
  await tab.setViewport({ width: WINDOW, height: SCREEN });
  await tab.goto(pathToFileURL(html).href, { waitUntil: 'load', timeout: 60000 });
  const m = await tab.evaluate(inPage, COLUMN);
  m.file = file;
  m.pageErrors = consoleErrors;

  const shots = [];
  if (o.screens) {
    // The page as a reviewer scrolls it, details folded: one PNG per
    // screen; and each diagram alone.
    const total = await tab.evaluate(() => document.documentElement.scrollHeight);
    const n = Math.ceil(total / SCREEN);
    for (let i = 0; i < n; i++) {
      const p = path.join(dir, `screen-${String(i + 1).padStart(2, '0')}.png`);
      await tab.screenshot({ path: p, clip: { x: 0, y: i * SCREEN, width: WINDOW, height: Math.min(SCREEN, total - i * SCREEN) }, captureBeyondViewport: true });
      shots.push(p);
    }
    for (const d of m.diagrams) {
      if (d.error) continue;
      const box = await tab.$(`#diagram-${d.index}`);
      await tab.evaluate((el) => { for (let p = el.parentElement; p; p = p.parentElement) if (p.tagName === 'DETAILS') p.open = true; }, box);
      const p = path.join(dir, `diagram-${String(d.index).padStart(2, '0')}.png`);
      await box.screenshot({ path: p });
      d.screenshot = p;
    }
  }
  await tab.close();
  m.screens = shots;
  return m;
}

function judge(m, o) {
  const bad = [];
  for (const d of m.diagrams) {
    if (d.error) bad.push(`diagram ${d.index} (under "${d.heading}"): Mermaid error: ${d.error}`);
    else if (d.scale < o.minScale) {
      bad.push(`diagram ${d.index} (under "${d.heading}"): scale ${d.scale} < ${o.minScale} (natural width ${d.natural} px in a ${COLUMN} px column)`);
    }
  }
  if (o.maxHeight > 0 && m.seen > o.maxHeight) {
    bad.push(`page height ${m.seen} px as first seen (<details> folded but ${m.opened} opened by the report) > ${o.maxHeight} px (${(m.seen / SCREEN).toFixed(1)} screens)`);
  }
  for (const l of m.broken) bad.push(`link #${l} leads to no element of the page`);
  for (const e of m.pageErrors) bad.push(`page error: ${e}`);
  return bad;
}

function report(m, bad) {
  const scales = m.diagrams.filter((d) => !d.error).map((d) => d.scale);
  const min = scales.length ? Math.min(...scales) : 1;
  console.log(`${m.file}: height ${m.seen} px as first seen (${(m.seen / SCREEN).toFixed(1)} screens of ${SCREEN} px; ` +
    `${m.opened} of ${m.details} <details> open), ${m.folded} px all folded, ${m.expanded} px all open; ${m.diagrams.length} diagrams, min scale ${min}; ${m.tables} tables; ` +
    `${m.links} internal links, ${m.broken.length} broken`);
  console.log('  sections: ' + m.sections.map((x) => `${x.heading} ${x.height} px`).join(', '));
  for (const d of m.diagrams) {
    const where = d.heading ? ` under "${d.heading}"` : '';
    console.log(d.error ? `  diagram ${d.index}${where}: ERROR ${d.error}`
      : `  diagram ${d.index}${where}: scale ${d.scale} (${d.natural} px natural, ${d.width}x${d.height} px shown)${d.folded ? ', in <details>' : ''}`);
  }
  for (const x of m.overflow) console.log(`  overflow: a ${x.what} under "${x.heading}" is ${x.width} px wide (column ${x.column} px)`);
  for (const l of m.broken) console.log(`  broken link: #${l}`);
  for (const b of bad) console.log(`  FAIL: ${b}`);
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  fs.mkdirSync(o.out, { recursive: true });
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'render-check-profile-'));
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    userDataDir: profile,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--allow-file-access-from-files', '--font-render-hinting=none'],
    protocolTimeout: 120000,
  });
  let failed = 0;
  const all = [];
  try {
    for (const f of o.files) {
      const m = await checkOne(browser, f, o);
      const bad = judge(m, o);
      m.failures = bad;
      report(m, bad);
      all.push(m);
      if (bad.length) failed++;
    }
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  fs.writeFileSync(path.join(o.out, 'summary.json'), JSON.stringify(all, null, 2) + '\n');
  console.log(`render-check: ${o.files.length} report(s) rendered, ${failed} not acceptable; screenshots and summary.json in ${o.out}`);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.error(`render-check: ${e && e.stack ? e.stack : e}`);
  process.exit(2);
});
