// JAX 0.12.0.1's MosaicGpuDialectTCGen05Test.test_tcgen05_mma88 as it reaches layout inference
// (the shared corpus' module): a tcgen05 MMA whose only SMEM is its operands, its 128x512 f16
// result stored straight to GMEM (staged through SMEM: 131072 bytes).
"builtin.module"() <{sym_name = "unknown"}> ({
  "func.func"() <{function_type = (!llvm.ptr, !llvm.ptr, i64, i64, !llvm.ptr, !llvm.ptr, i64, !llvm.ptr) -> (), sym_name = "mosaic_gpu_init_tma_desc", sym_visibility = "private"}> ({
  }) : () -> ()
  "func.func"() <{function_type = (!llvm.ptr, !llvm.ptr, i64, i64, !llvm.ptr, !llvm.ptr, i64, !llvm.ptr, !llvm.ptr, i64, i64, !llvm.ptr) -> (), sym_name = "mosaic_gpu_init_tma_im2col_desc", sym_visibility = "private"}> ({
  }) : () -> ()
  "llvm.mlir.global"() <{addr_space = 4 : i32, global_type = !llvm.array<0 x i8>, linkage = #llvm.linkage<external>, sym_name = "global_scratch", tls_mode = 0 : i64, visibility_ = 0 : i64}> ({
  }) : () -> ()
  "func.func"() <{function_type = (!llvm.ptr, !llvm.ptr) -> (), sym_name = "matmul_mosaic_gpu"}> ({
  ^bb0(%arg0: !llvm.ptr, %arg1: !llvm.ptr):
    %0 = "arith.constant"() <{value = false}> : () -> i1
    %1 = "arith.constant"() <{value = 32768 : i32}> : () -> i32
    %2 = "arith.constant"() <{value = 10000000 : i32}> : () -> i32
    %3 = "arith.constant"() <{value = 1 : i32}> : () -> i32
    %4 = "arith.constant"() <{value = 131072 : i32}> : () -> i32
    %5 = "arith.constant"() <{value = 0 : i32}> : () -> i32
    %6 = "arith.constant"() <{value = 8 : i64}> : () -> i64
    %7 = "arith.constant"() <{value = 163860 : i32}> : () -> i32
    %8 = "arith.constant"() <{value = 128 : index}> : () -> index
    %9 = "arith.constant"() <{value = 1 : index}> : () -> index
    %10 = "arith.constant"() <{value = 512 : i64}> : () -> i64
    %11 = "arith.constant"() <{value = 1 : i64}> : () -> i64
    %12 = "arith.constant"() <{value = 128 : i64}> : () -> i64
    %13 = "arith.constant"() <{value = 0 : i64}> : () -> i64
    %14 = "llvm.mlir.undef"() : () -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %15 = "builtin.unrealized_conversion_cast"(%arg0) : (!llvm.ptr) -> !gpu.async.token
    %16 = "llvm.load"(%arg1) <{ordering = 0 : i64}> : (!llvm.ptr) -> !llvm.ptr
    %17 = "llvm.insertvalue"(%14, %16) <{position = array<i64: 0>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, !llvm.ptr) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %18 = "llvm.insertvalue"(%17, %16) <{position = array<i64: 1>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, !llvm.ptr) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %19 = "llvm.insertvalue"(%18, %13) <{position = array<i64: 2>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, i64) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %20 = "llvm.insertvalue"(%19, %12) <{position = array<i64: 3, 0>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, i64) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %21 = "llvm.insertvalue"(%20, %12) <{position = array<i64: 3, 1>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, i64) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %22 = "llvm.insertvalue"(%21, %12) <{position = array<i64: 4, 0>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, i64) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %23 = "llvm.insertvalue"(%22, %11) <{position = array<i64: 4, 1>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, i64) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %24 = "builtin.unrealized_conversion_cast"(%23) {mosaic_gpu.from_kernel_arg_idx = 0 : i32, mosaic_gpu.original_kernel_arg} : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>) -> memref<128x128xf16>
    %25 = "llvm.getelementptr"(%arg1) <{elem_type = !llvm.ptr, noWrapFlags = 0 : i32, rawConstantIndices = array<i32: 1>}> : (!llvm.ptr) -> !llvm.ptr
    %26 = "llvm.load"(%25) <{ordering = 0 : i64}> : (!llvm.ptr) -> !llvm.ptr
    %27 = "llvm.insertvalue"(%14, %26) <{position = array<i64: 0>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, !llvm.ptr) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %28 = "llvm.insertvalue"(%27, %26) <{position = array<i64: 1>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, !llvm.ptr) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %29 = "llvm.insertvalue"(%28, %13) <{position = array<i64: 2>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, i64) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %30 = "llvm.insertvalue"(%29, %12) <{position = array<i64: 3, 0>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, i64) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %31 = "llvm.insertvalue"(%30, %10) <{position = array<i64: 3, 1>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, i64) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %32 = "llvm.insertvalue"(%31, %10) <{position = array<i64: 4, 0>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, i64) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %33 = "llvm.insertvalue"(%32, %11) <{position = array<i64: 4, 1>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, i64) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %34 = "builtin.unrealized_conversion_cast"(%33) {mosaic_gpu.from_kernel_arg_idx = 1 : i32, mosaic_gpu.original_kernel_arg} : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>) -> memref<128x512xf16>
    %35 = "llvm.getelementptr"(%arg1) <{elem_type = !llvm.ptr, noWrapFlags = 0 : i32, rawConstantIndices = array<i32: 2>}> : (!llvm.ptr) -> !llvm.ptr
    %36 = "llvm.load"(%35) <{ordering = 0 : i64}> : (!llvm.ptr) -> !llvm.ptr
    %37 = "llvm.insertvalue"(%14, %36) <{position = array<i64: 0>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, !llvm.ptr) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %38 = "llvm.insertvalue"(%37, %36) <{position = array<i64: 1>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, !llvm.ptr) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %39 = "llvm.insertvalue"(%38, %13) <{position = array<i64: 2>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, i64) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %40 = "llvm.insertvalue"(%39, %12) <{position = array<i64: 3, 0>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, i64) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %41 = "llvm.insertvalue"(%40, %10) <{position = array<i64: 3, 1>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, i64) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %42 = "llvm.insertvalue"(%41, %10) <{position = array<i64: 4, 0>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, i64) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %43 = "llvm.insertvalue"(%42, %11) <{position = array<i64: 4, 1>}> : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>, i64) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
    %44 = "builtin.unrealized_conversion_cast"(%43) {mosaic_gpu.from_kernel_arg_idx = 2 : i32, mosaic_gpu.original_kernel_arg} : (!llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>) -> memref<128x512xf16>
    %45 = "gpu.launch"(%15, %9, %9, %9, %8, %9, %9, %7) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 0>}> ({
    ^bb0(%arg2: index, %arg3: index, %arg4: index, %arg5: index, %arg6: index, %arg7: index, %arg8: index, %arg9: index, %arg10: index, %arg11: index, %arg12: index, %arg13: index):
      %46 = "mosaic_gpu.slice_smem"() <{offset = 0 : i32}> : () -> memref<128x128xf16, #gpu.address_space<workgroup>>
      %47 = "mosaic_gpu.slice_smem"() <{offset = 32768 : i32}> : () -> memref<128x512xf16, #gpu.address_space<workgroup>>
      %48 = "mosaic_gpu.slice_smem"() <{offset = 163840 : i32}> : () -> memref<1x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
      %49 = "builtin.unrealized_conversion_cast"(%48) : (memref<1x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>) -> !llvm.struct<(ptr<3>, ptr<3>, i64, array<1 x i64>, array<1 x i64>)>
      %50 = "llvm.extractvalue"(%49) <{position = array<i64: 1>}> : (!llvm.struct<(ptr<3>, ptr<3>, i64, array<1 x i64>, array<1 x i64>)>) -> !llvm.ptr<3>
      %51 = "llvm.extractvalue"(%49) <{position = array<i64: 2>}> : (!llvm.struct<(ptr<3>, ptr<3>, i64, array<1 x i64>, array<1 x i64>)>) -> i64
      %52 = "llvm.mul"(%51, %6) <{overflowFlags = 0 : i32}> : (i64, i64) -> i64
      %53 = "llvm.ptrtoint"(%50) : (!llvm.ptr<3>) -> i64
      %54 = "llvm.add"(%53, %52) <{overflowFlags = 0 : i32}> : (i64, i64) -> i64
      %55 = "llvm.inttoptr"(%54) : (i64) -> !llvm.ptr<3>
      "mosaic_gpu.initialize_barrier"(%55) <{arrival_count = 1 : i64, num_barriers = 1 : i32, orders_tensor_core = false}> : (!llvm.ptr<3>) -> ()
      %56 = "memref.alloca"() <{operandSegmentSizes = array<i32: 0, 0>}> : () -> memref<i32>
      "memref.store"(%5, %56) : (i32, memref<i32>) -> ()
      %57 = "mosaic_gpu.slice_smem"() <{offset = 163848 : i32}> : () -> memref<1x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
      %58 = "builtin.unrealized_conversion_cast"(%57) : (memref<1x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>) -> !llvm.struct<(ptr<3>, ptr<3>, i64, array<1 x i64>, array<1 x i64>)>
      %59 = "llvm.extractvalue"(%58) <{position = array<i64: 1>}> : (!llvm.struct<(ptr<3>, ptr<3>, i64, array<1 x i64>, array<1 x i64>)>) -> !llvm.ptr<3>
      %60 = "llvm.extractvalue"(%58) <{position = array<i64: 2>}> : (!llvm.struct<(ptr<3>, ptr<3>, i64, array<1 x i64>, array<1 x i64>)>) -> i64
      %61 = "llvm.mul"(%60, %6) <{overflowFlags = 0 : i32}> : (i64, i64) -> i64
      %62 = "llvm.ptrtoint"(%59) : (!llvm.ptr<3>) -> i64
      %63 = "llvm.add"(%62, %61) <{overflowFlags = 0 : i32}> : (i64, i64) -> i64
      %64 = "llvm.inttoptr"(%63) : (i64) -> !llvm.ptr<3>
      "mosaic_gpu.initialize_barrier"(%64) <{arrival_count = 1 : i64, num_barriers = 1 : i32, orders_tensor_core = true}> : (!llvm.ptr<3>) -> ()
      %65 = "memref.alloca"() <{operandSegmentSizes = array<i32: 0, 0>}> : () -> memref<i32>
      "memref.store"(%5, %65) : (i32, memref<i32>) -> ()
      %66 = "mosaic_gpu.slice_smem"() <{offset = 163856 : i32}> : () -> memref<i32, #gpu.address_space<workgroup>>
      %67 = "llvm.inline_asm"() <{asm_string = "fence.mbarrier_init.release.cluster;", constraints = "", has_side_effects, tail_call_kind = #llvm.tailcallkind<none>}> : () -> !llvm.void
      %68 = "mosaic_gpu.tmem_alloc"(%66) <{collective = false, packing = 1 : i32}> : (memref<i32, #gpu.address_space<workgroup>>) -> memref<128x512xf16, #mosaic_gpu.tmem>
      "mosaic_gpu.tmem_relinquish_alloc_permit"() <{collective = false}> : () -> ()
      "gpu.barrier"() <{scope = #gpu.barrier_scope<workgroup>}> : () -> ()
      %69 = "builtin.unrealized_conversion_cast"(%55) : (!llvm.ptr<3>) -> memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
      "mosaic_gpu.arrive_expect_tx"(%69, %4) : (memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, i32) -> ()
      "mosaic_gpu.async_load"(%34, %47, %69, %5, %5) <{collective = [], oob_fill_mode = 2 : i32, operandSegmentSizes = array<i32: 1, 1, 1, 2, 0, 0>, slice_lengths = array<i64: 128, 512>}> : (memref<128x512xf16>, memref<128x512xf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, i32, i32) -> ()
      %70 = "memref.load"(%56) : (memref<i32>) -> i32
      %71 = "arith.andi"(%70, %3) : (i32, i32) -> i32
      %72 = "arith.cmpi"(%71, %5) <{predicate = 1 : i64}> : (i32, i32) -> i1
      %73 = "arith.xori"(%70, %3) : (i32, i32) -> i32
      "memref.store"(%73, %56) : (i32, memref<i32>) -> ()
      %74 = "arith.extui"(%72) : (i1) -> i32
      "nvvm.mbarrier.try_wait.parity"(%55, %74, %2) : (!llvm.ptr<3>, i32, i32) -> ()
      "mosaic_gpu.arrive_expect_tx"(%69, %1) : (memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, i32) -> ()
      "mosaic_gpu.async_load"(%24, %46, %69, %5, %5) <{collective = [], oob_fill_mode = 2 : i32, operandSegmentSizes = array<i32: 1, 1, 1, 2, 0, 0>, slice_lengths = array<i64: 128, 128>}> : (memref<128x128xf16>, memref<128x128xf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, i32, i32) -> ()
      %75 = "memref.load"(%56) : (memref<i32>) -> i32
      %76 = "arith.andi"(%75, %3) : (i32, i32) -> i32
      %77 = "arith.cmpi"(%76, %5) <{predicate = 1 : i64}> : (i32, i32) -> i1
      %78 = "arith.xori"(%75, %3) : (i32, i32) -> i32
      "memref.store"(%78, %56) : (i32, memref<i32>) -> ()
      %79 = "arith.extui"(%77) : (i1) -> i32
      "nvvm.mbarrier.try_wait.parity"(%55, %79, %2) : (!llvm.ptr<3>, i32, i32) -> ()
      "mosaic_gpu.tcgen05_mma"(%68, %46, %47, %0) <{collective = false, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0>}> : (memref<128x512xf16, #mosaic_gpu.tmem>, memref<128x128xf16, #gpu.address_space<workgroup>>, memref<128x512xf16, #gpu.address_space<workgroup>>, i1) -> ()
      %80 = "builtin.unrealized_conversion_cast"(%64) : (!llvm.ptr<3>) -> memref<!mosaic_gpu.barrier<orders_tensor_core = true>, #gpu.address_space<workgroup>>
      "mosaic_gpu.tcgen05_commit_arrive"(%80) <{collective = false}> : (memref<!mosaic_gpu.barrier<orders_tensor_core = true>, #gpu.address_space<workgroup>>) -> ()
      %81 = "memref.load"(%65) : (memref<i32>) -> i32
      %82 = "arith.andi"(%81, %3) : (i32, i32) -> i32
      %83 = "arith.cmpi"(%82, %5) <{predicate = 1 : i64}> : (i32, i32) -> i1
      %84 = "arith.xori"(%81, %3) : (i32, i32) -> i32
      "memref.store"(%84, %65) : (i32, memref<i32>) -> ()
      %85 = "arith.extui"(%83) : (i1) -> i32
      "nvvm.mbarrier.try_wait.parity"(%64, %85, %2) : (!llvm.ptr<3>, i32, i32) -> ()
      "nvvm.tcgen05.fence"() <{kind = #nvvm.tcgen05_fence<after>}> : () -> ()
      %86 = "mosaic_gpu.async_load_tmem"(%68) : (memref<128x512xf16, #mosaic_gpu.tmem>) -> vector<128x512xf16>
      "mosaic_gpu.vector_store"(%86, %44) <{multimem = false}> : (vector<128x512xf16>, memref<128x512xf16>) -> ()
      "gpu.barrier"() <{scope = #gpu.barrier_scope<workgroup>}> : () -> ()
      "mosaic_gpu.tmem_dealloc"(%68) : (memref<128x512xf16, #mosaic_gpu.tmem>) -> ()
      "gpu.terminator"() : () -> ()
    }) : (!gpu.async.token, index, index, index, index, index, index, i32) -> !gpu.async.token
    "func.return"() : () -> ()
  }) {llvm.emit_c_interface} : () -> ()
}) {mosaic_gpu.arch_major = 10 : i32, mosaic_gpu.arch_minor = 0 : i32, mosaic_gpu.dump_basename = "unknown_1306"} : () -> ()
