/** Public exports of agent-toolbelt. */
export { Tool } from './tool.js';
export { Workspace, PathOutsideWorkspaceError, workspaceRootFor, toolOutputDir } from './workspace.js';
