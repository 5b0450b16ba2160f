/*
 * handlers_management.h - the routes of /management/v1 (docs/auth.md
 * "The management API"): principals, roles, memberships and grants, for
 * principals holding ADMIN on the catalog.
 */
#ifndef FLOE_HANDLERS_MANAGEMENT_H
#define FLOE_HANDLERS_MANAGEMENT_H

#include "http.h"

void handle_mgmt_principal_create(struct http_request *req);
void handle_mgmt_principal_list(struct http_request *req);
void handle_mgmt_principal_get(struct http_request *req);
void handle_mgmt_principal_disable(struct http_request *req);
void handle_mgmt_principal_enable(struct http_request *req);
void handle_mgmt_principal_rotate(struct http_request *req);
void handle_mgmt_principal_privileges(struct http_request *req);
void handle_mgmt_role_create(struct http_request *req);
void handle_mgmt_role_list(struct http_request *req);
void handle_mgmt_role_update(struct http_request *req);
void handle_mgmt_role_delete(struct http_request *req);
void handle_mgmt_member_add(struct http_request *req);
void handle_mgmt_member_remove(struct http_request *req);
void handle_mgmt_grant_add(struct http_request *req);
void handle_mgmt_grant_revoke(struct http_request *req);
void handle_mgmt_grant_list(struct http_request *req);

#endif
