import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ASYNCAPI_PATH, OPENAPI_PATH } from '@lop/contract';
import express, { type Router } from 'express';
import type { Element, ElementContent, Root as HastRoot } from 'hast';
import type { Root as MdastRoot, RootContent as MdastContent } from 'mdast';
import rehypeSanitize from 'rehype-sanitize';
import rehypeStringify from 'rehype-stringify';
import remarkGfm from 'remark-gfm';
import remarkParse from 'remark-parse';
import remarkRehype from 'remark-rehype';
import { unified } from 'unified';

export const GUIDES_PATH = '/docs/guides';

/** The partner guides served at /docs/guides, from the very markdown in docs/ (one source, no copy to drift). */
export const GUIDES: readonly { slug: string; file: string; title: string }[] = [
  { slug: 'getting-started', file: 'getting-started.md', title: 'Getting started' },
  { slug: 'authentication', file: 'authentication.md', title: 'Authentication and keys' },
  { slug: 'idempotency', file: 'idempotency.md', title: 'Idempotency' },
  { slug: 'events', file: 'events.md', title: 'Events and reconciliation' },
  { slug: 'webhooks', file: 'webhooks.md', title: 'Webhooks and signature verification' },
  { slug: 'errors', file: 'errors.md', title: 'Errors' },
  { slug: 'lifecycle', file: 'lifecycle.md', title: 'Order lifecycle' },
  { slug: 'results', file: 'results-reports-exceptions.md', title: 'Results, reports and exceptions' },
  { slug: 'fhir', file: 'fhir.md', title: 'FHIR R4 view of results' },
  { slug: 'sandbox', file: 'sandbox.md', title: 'Sandbox' },
  { slug: 'request-log', file: 'request-log.md', title: 'The sandbox request log' },
  { slug: 'versioning', file: 'versioning.md', title: 'Versioning' },
  { slug: 'cli', file: 'cli.md', title: 'The lop CLI' },
];

/** The repository's docs/ folder, found upwards from this module (source or the built bundle). */
export function findDocsDir(from = import.meta.dirname): string | null {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'docs', 'webhooks.md')) && existsSync(join(dir, 'package.json'))) return join(dir, 'docs');
    if (dirname(dir) === dir) return null;
  }
}

/** GitHub's heading slugs, so links such as events.md#reconciliation-recovering-after-a-gap keep working. */
export function slugOf(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .trim()
    .replace(/\s/g, '-');
}

const byFile = new Map(GUIDES.map((g) => [g.file, g]));
const DOCUMENTS: Record<string, string> = { 'openapi.json': OPENAPI_PATH, 'asyncapi.json': ASYNCAPI_PATH };

/** A link to another file of docs/: its guide page, the served document, or (not served) plain text. */
function rewriteLink(url: string): string | null {
  const match = /^(?:\.\/)?([\w.-]+\.(?:md|json))(#[\w-]*)?$/.exec(url);
  if (!match) return url;
  const guide = byFile.get(match[1]);
  if (guide) return `${GUIDES_PATH}/${guide.slug}${match[2] ?? ''}`;
  return DOCUMENTS[match[1]] ?? null;
}

function rewriteLinks(nodes: MdastContent[]): MdastContent[] {
  return nodes.flatMap((node) => {
    if (node.type === 'link') {
      const url = rewriteLink(node.url);
      if (url === null) return rewriteLinks(node.children as MdastContent[]);
      node.url = url;
    }
    if ('children' in node) (node as { children: MdastContent[] }).children = rewriteLinks(node.children as MdastContent[]);
    return [node];
  });
}

const text = (node: ElementContent): string => (node.type === 'text' ? node.value : 'children' in node ? node.children.map(text).join('') : '');

/** Ids on headings, after sanitising (which would prefix them): derived from the heading's text only. */
function headingIds(node: HastRoot | Element): void {
  const seen = new Map<string, number>();
  const walk = (n: HastRoot | Element) => {
    for (const child of n.children) {
      if (child.type !== 'element') continue;
      if (/^h[1-6]$/.test(child.tagName)) {
        const base = slugOf(text(child));
        const count = seen.get(base) ?? 0;
        seen.set(base, count + 1);
        child.properties.id = count ? `${base}-${count}` : base;
      }
      walk(child);
    }
  };
  walk(node);
}

/**
 * Code blocks and tables that may scroll sideways (on a phone they do) are regions a keyboard can
 * reach and scroll, with a name a screen reader announces (axe `scrollable-region-focusable`). A
 * table keeps its own role inside a scrolling wrapper.
 */
function scrollableRegions(node: HastRoot | Element): void {
  node.children = node.children.map((child) => {
    if (child.type !== 'element') return child;
    if (child.tagName === 'pre') {
      const code = child.children.find((c): c is Element => c.type === 'element' && c.tagName === 'code');
      const language = /(?:^|\s)language-([\w-]+)/.exec(String((code?.properties.className as string[] | undefined)?.join(' ') ?? ''))?.[1];
      child.properties = { ...child.properties, tabIndex: 0, role: 'region', ariaLabel: language ? `Code sample (${language})` : 'Code sample' };
      return child;
    }
    if (child.tagName === 'table') {
      const headers = (child.children.find((c): c is Element => c.type === 'element' && c.tagName === 'thead')?.children ?? []).flatMap((row) => (row.type === 'element' ? row.children : []))
        .filter((cell) => cell.type === 'element')
        .map((cell) => text(cell).trim())
        .filter(Boolean);
      return { type: 'element', tagName: 'div', properties: { className: ['table-wrap'], tabIndex: 0, role: 'region', ariaLabel: headers.length ? `Table: ${headers.join(', ')}` : 'Table' }, children: [child] };
    }
    scrollableRegions(child);
    return child;
  });
}

/** Markdown to safe HTML: raw HTML in the markdown is dropped and the output sanitised (GitHub's rules). */
export function renderGuide(markdown: string): string {
  return unified()
    .use(remarkParse)
    .use(remarkGfm)
    .use(() => (tree: MdastRoot) => {
      tree.children = rewriteLinks(tree.children);
    })
    .use(remarkRehype)
    .use(rehypeSanitize)
    .use(() => (tree: HastRoot) => {
      headingIds(tree);
      scrollableRegions(tree);
    })
    .use(rehypeStringify)
    .processSync(markdown)
    .toString();
}

const escapeHtml = (value: string) => value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const STYLE = `
:root { color-scheme: light; --text: #1d2430; --muted: #5b6676; --accent: #2456c9; --border: #dfe3e9; --soft: #eef0f3; --focus: #a15c00; }
html { font-size: 100%; }
body { margin: 0; font-family: system-ui, -apple-system, 'Segoe UI', Roboto, 'Noto Sans', sans-serif; color: var(--text); line-height: 1.55; background: #f6f7f9; }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.layout { display: grid; grid-template-columns: minmax(12rem, 16rem) minmax(0, 1fr); max-width: 75rem; margin: 0 auto; gap: 2rem; padding: 1.5rem; }
nav ul { list-style: none; padding: 0; margin: 0; }
nav li { margin: 0.2rem 0; }
nav a[aria-current='page'] { font-weight: 700; color: var(--text); }
main { background: #fff; border: 1px solid var(--border); border-radius: 8px; padding: 1.5rem 2rem; min-width: 0; }
pre { background: var(--soft); padding: 0.8rem 1rem; border-radius: 6px; overflow-x: auto; font-size: 0.875rem; }
code { font-family: ui-monospace, 'SFMono-Regular', 'Liberation Mono', Menlo, monospace; font-size: 0.9em; }
table { border-collapse: collapse; }
.table-wrap { overflow-x: auto; margin: 1rem 0; }
.table-wrap table { margin: 0; }
/* Long code words (paths, identifiers) break rather than widen the page on a phone. */
p code, li code { overflow-wrap: anywhere; }
th, td { border: 1px solid var(--border); padding: 0.35rem 0.6rem; text-align: left; vertical-align: top; }
.top { background: #fff; border-bottom: 1px solid var(--border); padding: 0.6rem 1.5rem; display: flex; gap: 1.25rem; flex-wrap: wrap; align-items: center; }
.top strong { margin-right: auto; }
@media (max-width: 48rem) { .layout { grid-template-columns: 1fr; padding: 0.75rem; gap: 1rem; } main { padding: 1rem; } }
`;

/** The bar above the guides and the API reference: one set of links between them and the console. */
export function docsHeader(current: 'reference' | 'guides'): string {
  return `<header class="top" style="font-family: system-ui, sans-serif; display: flex; gap: 1.25rem; flex-wrap: wrap; align-items: center; padding: 0.6rem 1.5rem; border-bottom: 1px solid #dfe3e9; background: #fff;">
  <strong style="margin-right: auto;">Laboratory Ordering Partner API</strong>
  <a href="/docs"${current === 'reference' ? ' aria-current="page"' : ''}>API reference</a>
  <a href="${GUIDES_PATH}"${current === 'guides' ? ' aria-current="page"' : ''}>Guides</a>
  <a href="/console/">Sandbox console</a>
</header>`;
}

function page(title: string, slug: string | null, body: string): string {
  const nav = GUIDES.map((g) => `<li><a href="${GUIDES_PATH}/${g.slug}"${g.slug === slug ? ' aria-current="page"' : ''}>${escapeHtml(g.title)}</a></li>`).join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8" />
<meta name="viewport" content="width=device-width, initial-scale=1" />
<title>${escapeHtml(title)} · Laboratory Ordering Partner API</title>
<style>${STYLE}</style>
</head>
<body>
${docsHeader('guides')}
<div class="layout">
<nav aria-label="Guides"><ul>
${nav}
</ul></nav>
<main>
${body}
</main>
</div>
</body>
</html>`;
}

/** GET / (the list) and /{slug}, rendered once at start from docs/*.md: mount it at GUIDES_PATH, so other requests skip it on the prefix. */
export function partnerGuides(docsDir = findDocsDir()): Router {
  const router = express.Router();
  if (!docsDir) return router;
  const pages = new Map(GUIDES.map((g) => [g.slug, page(g.title, g.slug, renderGuide(readFileSync(join(docsDir, g.file), 'utf8')))]));
  const index = page(
    'Guides',
    null,
    `<h1>Guides</h1>\n<p>How to integrate, beside the <a href="/docs">API reference</a>. The same text is in the repository's <code>docs/</code> folder.</p>\n<ul>\n${GUIDES.map((g) => `<li><a href="${GUIDES_PATH}/${g.slug}">${escapeHtml(g.title)}</a></li>`).join('\n')}\n</ul>`,
  );
  const send = (html: string) => (_req: express.Request, res: express.Response) => void res.set('Cache-Control', 'no-cache').type('text/html').send(html);
  router.get('/', send(index));
  for (const [slug, html] of pages) router.get(`/${slug}`, send(html));
  return router;
}
