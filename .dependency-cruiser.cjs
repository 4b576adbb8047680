// Dependencies run one way (`npm run lint:dependencies`, part of `npm run lint` and CI).
// Between projects, Nx's module-boundaries rule (eslint.config.mjs) keeps apps → domain → db.
// Inside a project, two rules: no file imports itself back through others, and libs/domain's folders
// form a stack in which a folder imports only folders below it, so no folder-level tangle can grow back.

/**
 * libs/domain/src, bottom to top: each entry (a folder, or a single file at the root) may import only
 * entries listed before it. A new folder takes its place here; an import that points up the stack is
 * the sign that a piece belongs lower (or should be passed in as a port, like events' outbox).
 */
const DOMAIN_STACK = [
  // Foundations: no domain knowledge.
  'versions.ts',
  'http',
  'security',
  'common-schemas.ts',
  'config',
  'telemetry',
  'auth',
  // Which database answers a read (primary or a replica): knows the caller and the stream counter only.
  'reads',
  // The audit trail: records what the layers above read and change, knows nothing of them.
  'audit',
  // The partner's world, leaves first.
  'programs',
  'catalog',
  'subjects',
  'locations',
  'laboratory',
  'health',
  'requirements',
  'serviceability',
  'exceptions',
  'events',
  'webhooks',
  'orders',
  'results',
  'request-log',
  'metrics',
  'retention',
  'laboratory-operations',
  'sandbox',
  'console',
  'control-plane',
  // Transport: the request context, the guard and the procedure builder, then the procedures.
  'context.ts',
  'guard.ts',
  'trpc.ts',
  'routers',
  'routers-internal',
  // Published documents describe the procedures.
  'documents',
  'asyncapi',
  'openapi',
  'index.ts',
];

const DOMAIN = '^libs/domain/src/';
// A test may set its scene with anything (a report test records results through laboratory operations).
const TEST_FILE = '\\.test\\.ts$';
const entryPattern = (entries) => `${DOMAIN}(${entries.map((entry) => entry.replace(/\./g, '\\.')).join('|')})($|/)`;

const stackRules = DOMAIN_STACK.slice(0, -1).map((entry, index) => ({
  name: 'domain-stack',
  comment: `libs/domain/src/${entry} sits below ${DOMAIN_STACK.slice(index + 1).join(', ')} (DOMAIN_STACK in .dependency-cruiser.cjs).`,
  severity: 'error',
  from: { path: entryPattern([entry]), pathNot: TEST_FILE },
  to: { path: entryPattern(DOMAIN_STACK.slice(index + 1)) },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'A module that reaches itself through its imports: one of them belongs elsewhere.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'domain-unlisted',
      comment: 'Every folder of libs/domain/src has a place in DOMAIN_STACK (.dependency-cruiser.cjs).',
      severity: 'error',
      from: { path: DOMAIN, pathNot: [entryPattern(DOMAIN_STACK), TEST_FILE] },
      to: {},
    },
    ...stackRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist|out-tsc|\\.data)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.base.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs'] },
  },
};
