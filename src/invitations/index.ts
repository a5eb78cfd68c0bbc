/** Invitations: a person becomes a member of a product, and gets its mail, only once they accept. */
export { invitationMessageRenderer } from './mail.js';
export { invitationRoutes, inviteRoutes } from './routes.js';
export { INVITATION_SCHEMAS } from './schema.js';
export {
  cancelInvitation,
  invitePerson,
  pendingInvitations,
  resendInvitation,
  type InviteAnswer,
  type PendingInvitation,
} from './service.js';
export { parseInvite } from './input.js';
