import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '@lop/domain';
import { findDocsDir, GUIDES, renderGuide, slugOf } from './http/guides';
import { useScene } from './testing/scene';

describe('partner guides at /docs/guides, from docs/*.md', () => {
  const { api } = useScene();

  it('finds the repository docs/ folder', () => {
    expect(findDocsDir()).toMatch(/docs$/);
  });

  it('lists every guide, and serves each as HTML with its own title, no key needed', async () => {
    const index = await api.fetch('GET', '/docs/guides');
    expect(index.status).toBe(200);
    for (const guide of GUIDES) {
      expect(index.text).toContain(`href="/docs/guides/${guide.slug}"`);
      const page = await api.fetch('GET', `/docs/guides/${guide.slug}`);
      expect(page.status, guide.slug).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      const firstHeading = /^# (.+)$/m.exec(readFileSync(join(findDocsDir()!, guide.file), 'utf8'))![1];
      expect(page.text).toContain(`<h1 id="${slugOf(firstHeading.replace(/`/g, ''))}">`);
    }
    expect((await api.fetch('GET', '/docs/guides/operations')).status).toBe(404);
  });

  it('webhooks: says the whsec_ secret is the key whole, and carries both tested samples', async () => {
    const page = (await api.fetch('GET', '/docs/guides/webhooks')).text;
    expect(page).toContain('The secret is the key, whole.');
    expect(page).toContain('export function verifyWebhook(');
    expect(page).toContain('def verify_webhook(');
    // A link to another guide goes to its page and section, and that section exists there.
    expect(page).toContain('href="/docs/guides/events#reconciliation-recovering-after-a-gap"');
    expect((await api.fetch('GET', '/docs/guides/events')).text).toContain('id="reconciliation-recovering-after-a-gap"');
    // Served documents instead of repository files.
    expect(page).toContain('href="/api/public/partner-asyncapi"');
    expect(page).not.toMatch(/href="[^"]*\.md/);
  });

  it('errors: every error code the API can answer', async () => {
    const page = (await api.fetch('GET', '/docs/guides/errors')).text;
    for (const code of Object.keys(ERROR_CODES)) expect(page, code).toContain(`<code>${code}</code>`);
  });

  it('renders markdown without letting raw HTML or script links through', () => {
    const html = renderGuide('# T\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\n[x](javascript:alert(1)) [y](ops.md)');
    expect(html).not.toMatch(/<script|onerror|javascript:/);
    // A link to a file that is not a served guide becomes plain text.
    expect(html).toContain('y');
    expect(html).not.toContain('ops.md');
  });

  it('code blocks and tables, which scroll sideways on a phone, are named regions a keyboard can reach (axe scrollable-region-focusable)', () => {
    const html = renderGuide('# T\n\n```ts\nconst a = 1;\n```\n\n| Header | Content |\n|---|---|\n| a | b |\n\n- item\n\n  ```\n  nested\n  ```');
    expect(html).toContain('<pre tabindex="0" role="region" aria-label="Code sample (ts)"><code class="language-ts">');
    expect(html).toContain('<pre tabindex="0" role="region" aria-label="Code sample"><code>nested');
    expect(html).toMatch(/<div class="table-wrap" tabindex="0" role="region" aria-label="Table: Header, Content">\s*<table>/);
  });

  it('no table of the guides has an empty header cell', () => {
    for (const guide of GUIDES) {
      const html = renderGuide(readFileSync(join(findDocsDir()!, guide.file), 'utf8'));
      expect(html, guide.file).not.toMatch(/<th>\s*<\/th>/);
    }
  });
});
