import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ASYNCAPI_PATH } from '@lop/contract';
import express, { type RequestHandler, type Router } from 'express';
import { buildAsyncApiDocument } from '@lop/domain';
import { docsPage, TRY_IT } from './docs-page';
import { docsHeader } from './guides';
import { docsContentSecurityPolicy, securityHeaders } from './security-headers';

export const DOCS_PATH = '/docs';
const SCALAR_SCRIPT_PATH = `${DOCS_PATH}/scalar.js`;

/** Scalar's self-contained browser bundle, served from node_modules: no CDN is reached at run time. */
function scalarStandaloneScript(): string {
  const entry = createRequire(import.meta.url).resolve('@scalar/api-reference');
  return join(dirname(entry), 'browser', 'standalone.js');
}

/**
 * What makes Scalar's reference pass axe (no serious or critical violation, issue 35), by its own
 * configuration: no patch of the package.
 * - Text colours of at least 4.5:1 on every background the theme uses (#fff, #fbfbfb, #f6f6f6,
 *   #e7e7e7): the default light theme's grey text (#757575, #8e8e8e), accent (#09f) and method
 *   colours (blue #0082d0 measured 3.98:1 on #f6f6f6) are darker here; hue and hierarchy kept.
 * - The copy button of a code block is named "Copy" only while the block is hovered or has focus
 *   (its screen-reader text sits in a `hidden group-hocus-within:inline` span), so a screen reader
 *   browsing the page meets a button with no name: the screen-reader copy of the label always shows.
 * - A tag's list of endpoints scrolled sideways when a path was long, and holds no focusable
 *   element to scroll it with: the paths wrap instead.
 * - "Show More" on a collapsed tag is labelled "Show all {name} endpoints": a spoken name that does
 *   not contain the visible text (WCAG 2.5.3). Both strings are Scalar's translations, set here so
 *   the name starts with what the button shows.
 */
const SCALAR_ACCESSIBILITY = {
  customCss: `
.light-mode, .light-mode .scalar-app {
  --scalar-color-2: #595959 !important;
  --scalar-color-3: #6b6b6b !important;
  --scalar-color-accent: #0062c4 !important;
  --scalar-color-blue: #0069a8 !important;
  --scalar-color-green: #05734d !important;
  --scalar-color-red: #c8000a !important;
  --scalar-color-yellow: #8a6100 !important;
  --scalar-color-orange: #b34000 !important;
  --scalar-color-query: #006a6e !important;
}
.scalar-code-copy .sr-only .hidden { display: inline !important; }
.scalar-code-copy .sr-only [class~='group-hocus/copy-button:sr-only'] { display: none !important; }
.scalar-app ul.endpoints .endpoint-path { white-space: normal !important; overflow-wrap: anywhere; min-width: 0; }
`,
  localization: { translations: { actions: { showMore: 'Show more' }, navigation: { showAllEndpoints: 'Show more: all {name} endpoints' } } },
};

/**
 * GET the OpenAPI document: one fixed text, cacheable for five minutes (spec), whatever the
 * request says. It lists the configured base URLs only (`npm start` configures its own origin);
 * nothing of the request — Host, X-Forwarded-* — is written into it.
 */
export function openApiDocumentHandler(document: object): RequestHandler {
  const text = JSON.stringify(document);
  return (_req, res) => void res.set('Cache-Control', 'public, max-age=300').type('application/json').send(text);
}

/**
 * Documents that need no key: the AsyncAPI description of webhook deliveries (beside the OpenAPI
 * document) and the interactive API reference at /docs, which reads the live OpenAPI document.
 * `serverUrls` are the base URLs the document lists: the reference's Test Request calls them.
 */
export function publicDocuments({ serverUrls }: { serverUrls: (string | undefined)[] }): Router {
  const router = express.Router();
  const headers = securityHeaders(docsContentSecurityPolicy([TRY_IT], serverUrls));

  const asyncApiDocument = JSON.stringify(buildAsyncApiDocument());
  router.get(ASYNCAPI_PATH, (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300').type('application/json').send(asyncApiDocument);
  });

  const script = scalarStandaloneScript();
  router.get(SCALAR_SCRIPT_PATH, headers, (_req, res) => {
    res.set('Cache-Control', 'public, max-age=3600').sendFile(script);
  });
  // Our own page around Scalar's bundle (docs-page.ts): it sets up Test Request with the console's key and fixtures.
  const page = docsPage({
    title: 'Laboratory Ordering Partner API',
    scriptPath: SCALAR_SCRIPT_PATH,
    header: docsHeader('reference'),
    reference: {
      withDefaultFonts: false,
      telemetry: false,
      hideClientButton: true,
      // A reference for partners: no AI assistant, no MCP, no deploy/share/configure toolbar, no developer tools.
      mcp: { disabled: true },
      agent: { disabled: true },
      showDeveloperTools: 'never',
      _integration: 'express',
      ...SCALAR_ACCESSIBILITY,
    },
  });
  router.get(DOCS_PATH, headers, (_req, res) => {
    res.set('Cache-Control', 'no-cache').type('text/html').send(page);
  });
  return router;
}
