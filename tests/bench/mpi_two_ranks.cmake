# cmake -DMPIEXEC=... -DPROGRAM=... -DWORK_DIR=... -P mpi_two_ranks.cmake
#
# Runs the cnnbench binary as 2 CPU ranks of mpirun (gradients all-reduced over
# MPI) and checks what an operator reads: one header and one total, printed by
# rank 0 only, the per-rank table with both ranks, rank 1's --verbose line, and
# a result JSON holding both ranks' figures. --timeout makes mpirun end a hung
# job (status 110) well before ctest's own limit.
file(MAKE_DIRECTORY ${WORK_DIR})
set(json ${WORK_DIR}/mpi_two_ranks.json)
file(REMOVE ${json})
execute_process(
  COMMAND ${MPIEXEC} -np 2 --oversubscribe --timeout 60 ${PROGRAM}
          --device=cpu --model=trivial --image_size=32 --batch_size=4 --num_batches=6
          --num_warmup_batches=1 --display_every=3 --verbose --check_every=2 --result_json=${json}
  RESULT_VARIABLE status
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err
  TIMEOUT 90)
message("mpirun status ${status}\n${out}\n${err}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "mpirun -np 2 cnnbench ended with status '${status}' (110 = mpirun's timeout)")
endif()

function(expect_count text pattern expected what)
  string(REGEX MATCHALL "${pattern}" found "${text}")
  list(LENGTH found n)
  if(NOT n EQUAL expected)
    message(FATAL_ERROR "${what}: found ${n} times, expected ${expected}")
  endif()
endfunction()

expect_count("${out}" "total images/sec: [0-9.]+\n" 1 "the total (rank 0 only)")
expect_count("${out}" "Model: +trivial\n" 1 "the header (rank 0 only)")
expect_count("${out}" "Batch size:  8 global\n" 1 "the global batch of 2 ranks x 4")
expect_count("${out}" "Variables:   replicated, all-reduce: mpi" 1 "the MPI all-reduce")
expect_count("${out}" "\n  rank +host +CUDA +device +images/sec\n" 1 "the per-rank table's heading")
expect_count("${out}" "  [01] +[^ \n]+ +- +cpu +[0-9.]+\n" 2 "a per-rank line for each rank")
expect_count("${out}" "per-rank images/sec min / median / max: " 1 "the min / median / max line")
expect_count("${out}" "rank 1 of 2 \\([^)]*\\): 6 timed steps, [0-9.]+ images/sec\n" 1 "rank 1's --verbose line")
expect_count("${out}" "replicas: identical across 2 CPU ranks \\(parameter hash 0x[0-9a-f]+, after step 6\\)\n" 1
             "the replica check (rank 0 only)")

file(READ ${json} doc)
string(JSON ranks LENGTH "${doc}" per_rank)
string(JSON world GET "${doc}" run world_size)
string(JSON rank1 GET "${doc}" per_rank 1 rank)
if(NOT ranks EQUAL 2 OR NOT world EQUAL 2 OR NOT rank1 EQUAL 1)
  message(FATAL_ERROR "the result JSON holds ${ranks} ranks (world size ${world}), expected both")
endif()
string(JSON identical GET "${doc}" replicas identical)
string(JSON checks GET "${doc}" replicas checks)
if(NOT identical OR NOT checks EQUAL 3)
  message(FATAL_ERROR "the result JSON's replica check: identical ${identical}, ${checks} checks (expected 3: steps 2, 4 and 6, the last one also the end)")
endif()

# One flipped bit in rank 1's parameters (the test-only fault injector): the
# run ends with status 4 and rank 0 names rank 1 and the tensor.
execute_process(
  COMMAND ${MPIEXEC} -np 2 --oversubscribe --timeout 60 -x CNNBENCH_FAULT_INJECT_FLIP_BIT=1:100:22
          ${PROGRAM} --device=cpu --model=trivial --image_size=32 --batch_size=4 --num_batches=6
          --num_warmup_batches=1 --display_every=3 --check_every=2
  RESULT_VARIABLE status
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err
  TIMEOUT 90)
message("mpirun (fault injected) status ${status}\n${out}\n${err}")
if(NOT status EQUAL 4)
  message(FATAL_ERROR "a flipped bit ended with status '${status}', expected 4 (replica mismatch)")
endif()
expect_count("${out}" "replicas: MISMATCH after step 2: 1 of 2 CPU ranks" 1 "the mismatch line")
# (Patterns avoid ';': CMake would split a match holding one into two list items.)
expect_count("${out}" "replicas: rank 1 \\([^)]*\\) has parameter hash 0x[0-9a-f]+" 1
             "the line naming rank 1")
expect_count("${out}" "first differing tensor fc.weight: 1 of [0-9]+ elements differ" 1
             "the tensor and the number of elements that differ")
