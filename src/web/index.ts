/**
 * The pages people use in a browser (under /app): signing in with a one-time link from their
 * mail, sessions in a signed cookie, the products they belong to, and their API key.
 */
export { signinMessageRenderer } from './mail.js';
export { pageProblem, webRoutes, WEB_PREFIX, type WebOptions } from './routes.js';
export { operatorSignInLink, replaceApiKey } from './service.js';
export { sessionCookieOf } from './session.js';
