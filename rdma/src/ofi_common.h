/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RDMA_SRC_OFI_COMMON_H
#define RDMA_SRC_OFI_COMMON_H
#endif
