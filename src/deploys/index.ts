/** Deploys: recording that items went to an environment, listing them, their mail and webhook events. */
export { deployMessageRenderer, rollbackMessageRenderer } from './mail.js';
export { deployRoutes } from './routes.js';
export { KeptDeploys } from './listed.js';
export { parseDeployList } from './input.js';
export { DEPLOY_SCHEMAS, presentDeploys, type DeployJson } from './present.js';
export {
  deployersOf,
  deployHistoryOf,
  fillNotesHtml,
  findDeploys,
  getDeploy,
  notesHtmlOf,
  type ItemDeploy,
} from './service.js';
