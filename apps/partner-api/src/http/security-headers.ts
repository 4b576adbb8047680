import { createHash } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';

/**
 * The pages the service's origin serves to browsers, and what each may load. They share one
 * origin with the console, where a reader pastes a key: a script injected into any of them could
 * ask the console's tabs for it (apps/sandbox-console/src/session.ts seals the answer) or read
 * what the reader typed, so each page runs only the scripts it ships, and none can be framed.
 */
const COMMON = ["object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'"];

/** The console: it loads and calls nothing but its own origin. */
export const CONSOLE_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self' blob:",
  "form-action 'self'",
  ...COMMON,
].join('; ');

/**
 * The API reference at /docs: Scalar's bundle from this origin and the page's one inline script,
 * allowed by its hash. Scalar sets styles inline, hence 'unsafe-inline' for styles only. Test
 * Request calls the servers the OpenAPI document lists, which may be other origins.
 */
export function docsContentSecurityPolicy(inlineScripts: string[], serverUrls: (string | undefined)[]): string {
  const hashes = inlineScripts.map((script) => `'sha256-${createHash('sha256').update(script, 'utf8').digest('base64')}'`);
  const servers = [...new Set(serverUrls.filter((url): url is string => Boolean(url)).map((url) => new URL(url).origin))];
  return [
    "default-src 'self'",
    `script-src 'self' ${hashes.join(' ')}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    `connect-src 'self'${servers.map((origin) => ` ${origin}`).join('')}`,
    "form-action 'none'",
    ...COMMON,
  ].join('; ');
}

/** The guides: rendered Markdown, no script at all. */
export const GUIDES_CONTENT_SECURITY_POLICY = ["default-src 'self'", "script-src 'none'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:", "form-action 'none'", ...COMMON].join('; ');

/** Middleware: the policy, no framing (for browsers without frame-ancestors) and no content-type sniffing. */
export function securityHeaders(contentSecurityPolicy: string) {
  return (_req: Request, res: Response, next: NextFunction): void => {
    res.set({ 'Content-Security-Policy': contentSecurityPolicy, 'X-Frame-Options': 'DENY', 'X-Content-Type-Options': 'nosniff' });
    next();
  };
}
