/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Numeric addresses (IPv4 or IPv6, no name lookup): parsed into the
 * sockaddr gfr_rdma_listen and gfr_rdma_connect take, and the host and port
 * of one the engine reports.  No state; any thread.
 */
#ifndef GFR_ADDR_H
#define GFR_ADDR_H

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <string.h>
#include <sys/socket.h>

/* 0, or -EINVAL when host is not a numeric address or port not a port. */
static inline int
gfr_addr_parse_numeric(const char *host, const char *port, struct sockaddr_storage *ss)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_flags = AI_NUMERICHOST};
    struct addrinfo *res;

    if (getaddrinfo(host, port, &hints, &res) != 0)
        return -EINVAL;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

/* The numeric host ("?" for another family) and the port of sa. */
static inline void
gfr_addr_host_port(const struct sockaddr *sa, char host[INET6_ADDRSTRLEN], unsigned *port)
{
    strcpy(host, "?");
    *port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

        inet_ntop(AF_INET, &in->sin_addr, host, INET6_ADDRSTRLEN);
        *port = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

        inet_ntop(AF_INET6, &in6->sin6_addr, host, INET6_ADDRSTRLEN);
        *port = ntohs(in6->sin6_port);
    }
}

#endif /* GFR_ADDR_H */
