/**
 * The architecture's rules, checked on every test run (scripts/check-architecture.mjs):
 * features reach each other only through an index.ts, which offers the feature's operations and
 * never its repository; the shared layers know no feature.
 */
const FEATURES =
  '(items|search|conversation|activities|attachments|inbound|deploys|products|users|mail|invitations|notifications|webhooks|web)';

module.exports = {
  forbidden: [
    {
      name: 'feature-internals',
      comment:
        'Whatever is outside a feature (another feature, app.ts, cli.ts, any other folder) reaches it only ' +
        'through the index.ts it exports, never its repository or other internals.',
      severity: 'error',
      from: { path: '^src/([^/]+)' },
      to: { path: `^src/${FEATURES}/`, pathNot: ['^src/$1/', '^src/[^/]+/index\\.ts$'] },
    },
    {
      name: 'index-offers-no-repository',
      comment:
        "A feature's index.ts exports what the feature does (service operations, presenters, types), " +
        'so it imports no repository: another feature that needs data asks a service operation. ' +
        '(scripts/check-architecture.mjs also follows what it exports to where it is declared.)',
      severity: 'error',
      from: { path: '^src/[^/]+/index\\.ts$' },
      to: { path: '(^|/)repository\\.ts$' },
    },
    {
      name: 'shared-knows-no-feature',
      comment: 'http/, db/, jobs/ and the shared modules at the top of src/ serve every feature and import none.',
      severity: 'error',
      from: {
        path: '^src/(http/|db/|jobs/|errors\\.ts|time\\.ts|config\\.ts|scope\\.ts|lru\\.ts|settings\\.ts|markdown\\.ts)',
      },
      to: { path: `^src/${FEATURES}/` },
    },
    {
      name: 'pipeline-is-a-client',
      comment:
        'shiplog deploy runs where there is no database and no server configuration: ' +
        'pipeline/ speaks HTTP and imports nothing else of src/.',
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
