import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import express, { type RequestHandler, type Router } from 'express';
import { ASYNCAPI_PATH, buildAsyncApiDocument } from '@lop/domain';
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
      showToolbar: 'never',
      showDeveloperTools: 'never',
      _integration: 'express',
    },
  });
  router.get(DOCS_PATH, headers, (_req, res) => {
    res.set('Cache-Control', 'no-cache').type('text/html').send(page);
  });
  return router;
}
