/*
 * cors.h - Cross-Origin Resource Sharing, for browser clients such as
 * iceberg-js. Off unless --cors-origins lists origins (or "*"): then an
 * allowed origin's preflight is answered and its answers carry the CORS
 * headers; any other origin gets none, and the browser keeps the answer
 * from the page.
 */
#ifndef FLOE_CORS_H
#define FLOE_CORS_H

#include <stdbool.h>

#include "http.h"

/* Answers a preflight (OPTIONS with Origin and
 * Access-Control-Request-Method) from an allowed origin: 204 with the
 * methods, the headers asked for, and how long the browser may cache it.
 * Returns true when req was answered so; false leaves it to the router. */
bool cors_preflight(struct http_request *req);

/* Adds Access-Control-Allow-Origin and Access-Control-Expose-Headers to
 * req's answer when its Origin is allowed; nothing otherwise. */
void cors_decorate(struct http_request *req);

#endif
