/** Deploys: recording that items went to an environment, listing them, and their mail. */
export { deployMessageRenderer } from './mail.js';
export { deployRoutes } from './routes.js';
