/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A numeric address and port (IPv4 or IPv6, no name lookup) as a
 * sockaddr for gfr_rdma_listen and gfr_rdma_connect.  No state; any thread.
 */
#ifndef GFR_ADDR_H
#define GFR_ADDR_H

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

#endif /* GFR_ADDR_H */
