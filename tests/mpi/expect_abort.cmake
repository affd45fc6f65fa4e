# cmake -DMPIEXEC=... -DPROGRAM=... -P expect_abort.cmake
# Runs PROGRAM as 2 ranks; one of them calls Communicator::abort(7). Passes when
# mpirun ends the job well before the timeout with the abort's status: Open MPI
# 4.1 exits with the code given to MPI_Abort (7), never with its --timeout
# status (110). Its "MPI_ABORT was invoked" text is not required: mpirun
# sometimes loses it in a race of its help-message machinery.
string(TIMESTAMP start "%s")
execute_process(
  COMMAND ${MPIEXEC} -np 2 --oversubscribe --timeout 60 ${PROGRAM}
  RESULT_VARIABLE status
  OUTPUT_VARIABLE output
  ERROR_VARIABLE output
  TIMEOUT 90)
string(TIMESTAMP end "%s")
math(EXPR seconds "${end} - ${start}")
message("mpirun status ${status} after ${seconds} s\n${output}")
if(status EQUAL 0)
  message(FATAL_ERROR "the job succeeded although rank 1 aborted")
endif()
if(status EQUAL 110 OR NOT status MATCHES "^[0-9]+$")
  message(FATAL_ERROR "the job did not end by the abort: mpirun status '${status}' (110 = timeout)")
endif()
if(seconds GREATER 30)
  message(FATAL_ERROR "the abort took ${seconds} s to end the job")
endif()
if(NOT status EQUAL 7 AND NOT output MATCHES "MPI_ABORT")
  message(FATAL_ERROR "mpirun ended with status ${status}, not the abort's 7, and did not "
                      "report MPI_ABORT")
endif()
