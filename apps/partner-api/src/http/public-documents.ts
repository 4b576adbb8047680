import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import express, { type Request, type RequestHandler, type Router } from 'express';
import { ASYNCAPI_PATH, buildAsyncApiDocument } from '@lop/domain';
import { docsPage } from './docs-page';
import { docsHeader } from './guides';

export const DOCS_PATH = '/docs';
const SCALAR_SCRIPT_PATH = `${DOCS_PATH}/scalar.js`;

/** Scalar's self-contained browser bundle, served from node_modules: no CDN is reached at run time. */
function scalarStandaloneScript(): string {
  const entry = createRequire(import.meta.url).resolve('@scalar/api-reference');
  return join(dirname(entry), 'browser', 'standalone.js');
}

/** A Host header that names a host (and port), nothing else: it is written into the document. */
const HOST = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*|\[[0-9a-f:.]+\])(?::\d{1,5})?$/i;

/** The origin a request was made to, when its Host header is a plain host[:port]. */
export function requestOrigin(req: Request): string | null {
  const host = req.get('host');
  return host && HOST.test(host) ? `${req.protocol}://${host}` : null;
}

/**
 * GET the OpenAPI document. With configured base URLs it lists them and may be cached. Without
 * (a local \`npm start\`), it lists the origin it was fetched from, so the reference's samples
 * and a generated client can call the service that served them; that copy follows the request's
 * Host header, so no cache may keep it for anyone else.
 */
export function openApiDocumentHandler(document: { servers?: unknown }): RequestHandler {
  const fixed = document.servers ? JSON.stringify(document) : null;
  return (req, res) => {
    if (fixed) return void res.set('Cache-Control', 'public, max-age=300').type('application/json').send(fixed);
    const origin = requestOrigin(req);
    const served = origin ? { ...document, servers: [{ url: origin, description: 'This service (the origin this document was fetched from)' }] } : document;
    res.set('Cache-Control', 'no-store').type('application/json').send(JSON.stringify(served));
  };
}

/**
 * Documents that need no key: the AsyncAPI description of webhook deliveries (beside the OpenAPI
 * document) and the interactive API reference at /docs, which reads the live OpenAPI document.
 */
export function publicDocuments(): Router {
  const router = express.Router();

  const asyncApiDocument = JSON.stringify(buildAsyncApiDocument());
  router.get(ASYNCAPI_PATH, (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300').type('application/json').send(asyncApiDocument);
  });

  const script = scalarStandaloneScript();
  router.get(SCALAR_SCRIPT_PATH, (_req, res) => {
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
  router.get(DOCS_PATH, (_req, res) => {
    res.set('Cache-Control', 'no-cache').type('text/html').send(page);
  });
  return router;
}
