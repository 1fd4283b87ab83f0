import { defineEntity, p } from '@mikro-orm/core';
import { User } from '../account/user.entity.ts';
import { Project } from './project.entity.ts';

/** A user's star on a project; projects.star_count is kept in step with these rows. */
export const ProjectStarSchema = defineEntity({
  name: 'ProjectStar',
  tableName: 'project_stars',
  properties: {
    project: () => p.manyToOne(Project).primary().deleteRule('cascade'),
    user: () => p.manyToOne(User).primary().deleteRule('cascade'),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export class ProjectStar extends ProjectStarSchema.class {}
ProjectStarSchema.setClass(ProjectStar);
