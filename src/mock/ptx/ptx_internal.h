/* The PTX interpreter's parsed form: modules, kernels, instructions and their operands. */
#ifndef NVHCQ_MOCK_PTX_INTERNAL_H
#define NVHCQ_MOCK_PTX_INTERNAL_H

#include "ptx.h"

#include <stdbool.h>

/* A type: kind in the high nibble, size in bytes in the low one. */
enum { TK_B = 1, TK_U, TK_S, TK_F, TK_P };
#define PTX_TYPE(kind, size) ((uint8_t)((kind) << 4 | (size)))
#define TYPE_KIND(t)         ((t) >> 4)
#define TYPE_SIZE(t)         ((t)&0xf)

enum ptx_space { SP_NONE, SP_GLOBAL, SP_SHARED, SP_LOCAL, SP_PARAM, SP_CONST };

enum ptx_op {
  OP_NONE,
  OP_ADD,
  OP_SUB,
  OP_MUL,
  OP_MAD,
  OP_FMA,
  OP_DIV,
  OP_REM,
  OP_MIN,
  OP_MAX,
  OP_NEG,
  OP_ABS,
  OP_AND,
  OP_OR,
  OP_XOR,
  OP_NOT,
  OP_SHL,
  OP_SHR,
  OP_MOV,
  OP_CVT,
  OP_CVTA,
  OP_SETP,
  OP_SELP,
  OP_LD,
  OP_ST,
  OP_ATOM,
  OP_RED,
  OP_BAR,
  OP_SHFL,
  OP_VOTE,
  OP_REDUX,
  OP_EX2,
  OP_LG2,
  OP_RCP,
  OP_SQRT,
  OP_RSQRT,
  OP_SIN,
  OP_COS,
  OP_RET,
  OP_EXIT,
  OP_TRAP,
  OP_BRA,
  OP_NOP,
  OP_POPC,
  OP_CLZ,
  OP_BREV,
  OP_CNOT,
  OP_TANH,
  OP_WARPSYNC,
  OP_CARRIVE, /* barrier.cluster.arrive */
  OP_CWAIT,   /* barrier.cluster.wait */
  OP_MAPA,
  OP_ELECT, /* elect.sync */
  OP_WGMMA, /* wgmma.mma_async */
  OP_MBAR,  /* mbarrier.*: the form in sub (MB_*) */
  OP_TMA,   /* cp.async.bulk.tensor */
  OP_COUNT
};

/* Sub-operations: compares, atomic/reduction operations, shuffle and vote modes. */
enum ptx_sub {
  SUB_NONE,
  CMP_EQ,
  CMP_NE,
  CMP_LT,
  CMP_LE,
  CMP_GT,
  CMP_GE,
  CMP_LO,
  CMP_LS,
  CMP_HI,
  CMP_HS,
  CMP_EQU,
  CMP_NEU,
  CMP_LTU,
  CMP_LEU,
  CMP_GTU,
  CMP_GEU,
  CMP_NUM,
  CMP_NAN,
  AT_ADD,
  AT_MIN,
  AT_MAX,
  AT_EXCH,
  AT_CAS,
  AT_INC,
  AT_DEC,
  AT_AND,
  AT_OR,
  AT_XOR,
  SH_UP,
  SH_DOWN,
  SH_BFLY,
  SH_IDX,
  VT_ALL,
  VT_ANY,
  VT_UNI,
  VT_BALLOT,
  MB_INIT,
  MB_INVAL,
  MB_ARRIVE,
  MB_ARRIVE_DROP,
  MB_EXPECT_TX,
  MB_COMPLETE_TX,
  MB_TEST_WAIT,
  MB_TRY_WAIT,
  MB_PENDING
};

enum ptx_round { RND_NONE, RND_RN, RND_RZ, RND_RM, RND_RP, RND_RNI, RND_RZI, RND_RMI, RND_RPI };

enum { F_SAT = 1, F_WIDE = 2, F_HI = 4, F_LO = 8, F_TO = 16, F_APPROX = 32 };
/* The same bits, read by OP_MBAR and OP_TMA. */
enum {
  F_MB_TX = 1,        /* mbarrier.arrive.expect_tx: expects bytes before arriving */
  F_MB_PARITY = 2,    /* test_wait / try_wait .parity: the operand is a phase parity */
  F_MB_NOCOMPLETE = 4 /* arrive.noComplete: the arrival may not complete the phase */
};
enum { F_TMA_MULTICAST = 1 }; /* cp.async.bulk.tensor .multicast::cluster */

enum ptx_operand_kind { OPD_NONE, OPD_REG, OPD_IMM, OPD_SYM, OPD_SPECIAL, OPD_MEM, OPD_VEC };
enum ptx_imm_kind { IMM_INT, IMM_F32, IMM_F64 };

enum ptx_special {
  SR_TID,
  SR_NTID,
  SR_CTAID,
  SR_NCTAID,
  SR_LANEID,
  SR_WARPID,
  SR_NWARPID,
  SR_SMID,
  SR_CLOCK,
  SR_CLOCK64,
  SR_GLOBALTIMER,
  SR_LANEMASK_EQ,
  SR_LANEMASK_LT,
  SR_LANEMASK_LE,
  SR_LANEMASK_GT,
  SR_LANEMASK_GE,
  SR_DYN_SMEM,
  SR_TOTAL_SMEM,
  SR_CLUSTER_CTARANK,
  SR_CLUSTER_NCTARANK,
  SR_CLUSTERID,
  SR_NCLUSTERID,
  SR_CLUSTER_CTAID,
  SR_CLUSTER_NCTAID,
  SR_IS_EXPLICIT_CLUSTER
};

/* A symbol an instruction names: its state space and address there. */
typedef struct ptx_symbol {
  char name[128];
  uint8_t space;
  uint64_t address; /* host address (global, const), offset (shared, local, param) */
  size_t size;
} ptx_symbol;

typedef struct ptx_operand {
  uint8_t kind, imm_kind, nvec, component;
  int32_t reg, reg2; /* reg2: the second destination of "a|b" (or -1) */
  int32_t vec[4];    /* OPD_VEC registers (-1: "_"), the first four */
  /* Every register of a {list} (nvec of them; OPD_VEC, or an OPD_MEM's tensor coordinates
   * "[map, {x, y}]"): their index in the kernel's lists. */
  int32_t list;
  int64_t imm;          /* immediate bits, or a memory operand's offset */
  uint64_t sym_address; /* OPD_SYM / OPD_MEM with a symbol */
  uint8_t sym_space;    /* the symbol's space (SP_NONE: a register base) */
  int32_t label;        /* a branch target: an instruction index */
} ptx_operand;

/* wgmma.mma_async with A in shared memory has eight: d, a-desc, b-desc, scale-d, imm-scale-a,
 * imm-scale-b, imm-trans-a, imm-trans-b. */
#define PTX_MAX_OPERANDS 8

typedef struct ptx_insn {
  uint8_t op, type, type2, space, sub, rnd, flags, vec;
  int32_t pred; /* guard predicate register, or -1 */
  bool pred_neg;
  uint8_t nops;
  uint16_t shape; /* wgmma: N of m64nNk*; cp.async.bulk.tensor: the dimensions */
  ptx_operand ops[PTX_MAX_OPERANDS];
  int line;
} ptx_insn;

typedef struct ptx_reg_decl {
  char prefix[32];
  uint8_t type;
  bool hidden;   /* declared in a nested scope that has closed */
  int32_t count; /* -1: a single register named prefix */
  int32_t base;
  int depth; /* the scope ({ } nesting) it was declared in */
} ptx_reg_decl;

struct nvhcq_ptx_kernel {
  char name[128];
  const nvhcq_ptx_module *module;
  nvhcq_ptx_param *params;
  char (*param_names)[128];
  size_t nparams, params_size;
  ptx_insn *insns;
  size_t ninsns;
  int32_t nregs;
  ptx_reg_decl *regs;
  size_t nreg_decls;
  int32_t *lists; /* the registers of {list} operands (ptx_operand.list) */
  size_t nlists;
  ptx_symbol *syms; /* the kernel's own: params, .shared, .local */
  size_t nsyms;
  size_t shared_static, shared_align, local_size;
  char unsupported[256]; /* non-empty: the first instruction it cannot run ("line N: what") */
};

typedef struct ptx_var {
  ptx_symbol sym;
  unsigned char *data; /* global, const: the variable's storage */
} ptx_var;

struct nvhcq_ptx_module {
  nvhcq_ptx_kernel *kernels;
  size_t nkernels;
  ptx_var *vars;
  size_t nvars;
  size_t shared_static, shared_align; /* module-scope .shared variables */
};

/* parse_insn.c: one instruction's opcode and operands. Returns 0 or sets err. */
typedef struct ptx_parser ptx_parser;

#endif
