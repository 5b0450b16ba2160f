/*
 * url.c - a hook URL as libcurl reads it: the same parser checks a URL at
 * registration and delivers to it, so the two never disagree about which
 * host a URL names.
 */
#include "hooks.h"

#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

enum hook_url_result hook_url_split(const char *url, char **scheme, char **host)
{
	CURLU *u = curl_url();
	char *s = NULL;
	char *h = NULL;
	enum hook_url_result res = HOOK_URL_INVALID;

	*scheme = NULL;
	*host = NULL;
	if (u == NULL)
		return HOOK_URL_NOMEM;
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &s, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &h, 0) != CURLUE_OK)
		goto done;
	/* Copies the caller frees with free(), not curl_free(). */
	*scheme = strdup(s);
	*host = strdup(h);
	if (*scheme == NULL || *host == NULL) {
		free(*scheme);
		free(*host);
		*scheme = NULL;
		*host = NULL;
		res = HOOK_URL_NOMEM;
		goto done;
	}
	res = HOOK_URL_OK;
done:
	curl_free(s);
	curl_free(h);
	curl_url_cleanup(u);
	return res;
}
