import type { NextFunction, Request, Response } from 'express';
import { PartnerError } from '@lop/domain';

/**
 * Well-formed %XX escapes whose bytes are not UTF-8 (`%ff`, `%ED%A0%80`, the bytes of a lone
 * surrogate): no text is what the partner meant, and a decoder would put U+FFFD in its place, so
 * the value is refused. A `%` that starts no escape (`100%`) is text, taken as sent.
 */
export function undecodable(text: string): boolean {
  if (!text.includes('%') || /%(?![0-9A-Fa-f]{2})/.test(text)) return false;
  try {
    decodeURIComponent(text);
    return false;
  } catch {
    return true;
  }
}

export const invalidEncoding = (fields: string[]) =>
  new PartnerError('invalid_request', 'The request is not valid; see details.', {
    details: fields.map((field) => ({ field, issue: 'invalid_encoding', message: 'Percent-encode the value as UTF-8.' })),
  });

/** A query parameter's name as the details show it: decoded when it can be, as sent otherwise. */
function readableName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    return name;
  }
}

/**
 * Refuses a query string whose escapes are not UTF-8 before a parser reads it: the REST facade's
 * and tRPC's (`?input=`) would both turn them into U+FFFD, a different value than sent. Both doors
 * mount it.
 */
export function utf8Query() {
  return (req: Request, _res: Response, next: NextFunction) => {
    const query = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?') + 1) : '';
    const garbled = query
      .split('&')
      .filter(Boolean)
      .map((pair) => pair.split('=', 2) as [string, string?])
      .filter(([name, value = '']) => undecodable(name) || undecodable(value))
      .map(([name]) => readableName(name));
    next(garbled.length > 0 ? invalidEncoding(garbled) : undefined);
  };
}
