/** Users: accounts, API keys, authentication, and how a person is shown to others. */
export { authenticate, authenticateWith, requireUser, requireUserDocumentation } from './auth.js';
export { fullName, presentUser, USER_SCHEMAS, UserSchema, type UserJson } from './present.js';
export { findProfiles, PROFILE_TTL_MS, type UserProfile } from './profiles.js';
export { userRoutes } from './routes.js';
export {
  countUsers,
  createUser,
  findUserBy,
  findUserByEmail,
  findUserById,
  findUsersByIds,
  rotateApiKey,
  validEmail,
  type UserLookup,
} from './service.js';
