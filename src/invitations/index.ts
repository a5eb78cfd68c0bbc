/** Invitations: a person becomes a member of a product, and gets its mail, only once they accept. */
export { invitationMessageRenderer } from './mail.js';
export { INVITATION_SCHEMAS, invitationRoutes, inviteRoutes } from './routes.js';
