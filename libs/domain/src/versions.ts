/**
 * The service's build (release) version, reported by `GET /v1/health` (spec: "a `version`
 * string"): which release is running, for support and change logs. It changes with every release
 * and says nothing about compatibility. The root package.json carries the same value. The other
 * two version strings a partner sees (the API version and the event payload version) are published
 * vocabulary and live in @lop/contract (docs/versioning.md).
 */
export const SERVICE_VERSION = '0.1.0';
