/**
 * The sandbox request log's published vocabulary (docs/request-log.md): where a request came from,
 * and the bounds of its filters. The API, the console's Logs page and `lop logs tail` read them here.
 */

/**
 * `rest`: a REST request (curl, your integration); `lop`: a REST request of the `lop` CLI, told by
 * its User-Agent; `console`: the sandbox console's action that stands for a REST route.
 */
export const REQUEST_LOG_SOURCES = ['rest', 'lop', 'console'] as const;
export type RequestLogSource = (typeof REQUEST_LOG_SOURCES)[number];

/** The product token of lop's User-Agent (`lop/<version>`): the request log tells lop's requests by it. */
export const LOP_USER_AGENT_PRODUCT = 'lop';

/** The methods the request log's `method` filter takes: those of HTTP a REST route may answer. */
export const REQUEST_LOG_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type RequestLogMethod = (typeof REQUEST_LOG_METHODS)[number];

/** The longest text the request log's free-text filter (`q`) takes, in characters. */
export const REQUEST_LOG_QUERY_MAX = 100;

/** A key's display prefix: `lop_test_` and the next four characters (a sandbox key; the log holds no other). */
export const SANDBOX_KEY_PREFIX_PATTERN = /^lop_test_[0-9A-Za-z]{4}$/;
