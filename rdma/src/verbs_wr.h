/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDMA_SRC_VERBS_WR_H
#define RDMA_SRC_VERBS_WR_H
#endif
