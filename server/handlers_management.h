/*
 * handlers_management.h - the routes of /management/v1 (docs/auth.md
 * "The management API"): principals, roles, memberships and grants, for
 * principals holding ADMIN on the catalog.
 */
#ifndef FLOE_HANDLERS_MANAGEMENT_H
#define FLOE_HANDLERS_MANAGEMENT_H

#include "gate.h"

void handle_mgmt_principal_create(struct call *c);
void handle_mgmt_principal_list(struct call *c);
void handle_mgmt_principal_get(struct call *c);
void handle_mgmt_principal_disable(struct call *c);
void handle_mgmt_principal_enable(struct call *c);
void handle_mgmt_principal_rotate(struct call *c);
void handle_mgmt_principal_privileges(struct call *c);
void handle_mgmt_role_create(struct call *c);
void handle_mgmt_role_list(struct call *c);
void handle_mgmt_role_update(struct call *c);
void handle_mgmt_role_delete(struct call *c);
void handle_mgmt_member_add(struct call *c);
void handle_mgmt_member_remove(struct call *c);
void handle_mgmt_grant_add(struct call *c);
void handle_mgmt_grant_revoke(struct call *c);
void handle_mgmt_grant_list(struct call *c);

#endif
