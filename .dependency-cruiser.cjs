/**
 * The architecture's rules, checked on every test run (scripts/check-architecture.mjs):
 * features reach each other only through an index.ts; the shared layers know no feature.
 */
const FEATURES = '(items|deploys|products|users|mail|invitations|notifications|webhooks|web)';

module.exports = {
  forbidden: [
    {
      name: 'feature-internals',
      comment: "A feature reaches another only through the index.ts it exports, never its repository or other internals.",
      severity: 'error',
      from: { path: `^src/${FEATURES}/` },
      to: { path: `^src/${FEATURES}/`, pathNot: ['^src/$1/', '^src/[^/]+/index\\.ts$'] },
    },
    {
      name: 'shared-knows-no-feature',
      comment: 'http/, db/, jobs/ and the shared modules at the top of src/ serve every feature and import none.',
      severity: 'error',
      from: { path: '^src/(http/|db/|jobs/|errors\\.ts|time\\.ts|config\\.ts|scope\\.ts|lru\\.ts|settings\\.ts|markdown\\.ts)' },
      to: { path: `^src/${FEATURES}/` },
    },
    {
      name: 'composition-roots-use-indexes',
      comment: 'app.ts, server.ts, cli.ts and health.ts wire features together through their indexes.',
      severity: 'error',
      from: { path: '^src/[^/]+\\.ts$' },
      to: { path: `^src/${FEATURES}/`, pathNot: '^src/[^/]+/index\\.ts$' },
    },
    {
      name: 'pipeline-is-a-client',
      comment: 'shiplog deploy runs where there is no database and no server configuration: pipeline/ speaks HTTP and imports nothing else of src/.',
      severity: 'error',
      from: { path: '^src/pipeline/' },
      to: { path: '^src/', pathNot: '^src/pipeline/' },
    },
    {
      name: 'no-circular',
      comment: 'No module imports itself through others.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
