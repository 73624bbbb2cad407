! omp_fortran.f90 - the Fortran entries of the allocator and affinity-format
! families and INTEGER(8) arguments, as gfortran calls them (omp_lib):
! compiled and run on libgomp and on libthreadlab-gomp by run_fortran.sh
! (docs/omp-ult.md, "Tests"). Prints "ok NAME" per check; STOP 1 on the
! first failure, after a line "FAIL NAME: what".
program omp_fortran
  use omp_lib
  use iso_c_binding
  implicit none
  call check_allocators ()
  call check_affinity_format ()
  call check_integer8 ()
  print '(a)', 'PASSED'
contains
  subroutine fail (name, what)
    character(len=*), intent(in) :: name, what
    print '(4a)', 'FAIL ', name, ': ', what
    stop 1
  end subroutine

  subroutine check_allocators ()
    type (omp_alloctrait) :: traits(3)
    integer (omp_allocator_handle_kind) :: a, saved
    type (c_ptr) :: p, q
    traits = [omp_alloctrait (omp_atk_alignment, 64), &
              omp_alloctrait (omp_atk_pool_size, 4096), &
              omp_alloctrait (omp_atk_fallback, omp_atv_null_fb)]
    a = omp_init_allocator (omp_default_mem_space, 3, traits)
    if (a == omp_null_allocator) call fail ('allocators', 'omp_init_allocator refused valid traits')
    p = omp_alloc (3000_c_size_t, a)
    if (.not. c_associated (p)) call fail ('allocators', '3000 bytes of a 4096-byte pool: none')
    if (mod (transfer (p, 0_c_intptr_t), 64_c_intptr_t) /= 0) call fail ('allocators', 'alignment 64 ignored')
    q = omp_alloc (3000_c_size_t, a)
    if (c_associated (q)) call fail ('allocators', '6000 bytes of a 4096-byte pool (null_fb)')
    saved = omp_get_default_allocator ()
    call omp_set_default_allocator (a)
    if (omp_get_default_allocator () /= a) call fail ('allocators', 'omp_set_default_allocator ignored')
    q = omp_alloc (3000_c_size_t, omp_null_allocator)
    if (c_associated (q)) call fail ('allocators', 'the default allocator is not the pool')
    call omp_set_default_allocator (saved)
    call omp_free (p, a)
    call omp_destroy_allocator (a)
    traits(1) = omp_alloctrait (omp_atk_fallback, 999_c_intptr_t)
    if (omp_init_allocator (omp_default_mem_space, 1, traits) /= omp_null_allocator) &
      call fail ('allocators', 'fallback 999 accepted')
    print '(a)', 'ok allocators'
  end subroutine

  subroutine check_affinity_format ()
    character(len=12) :: buf
    character(len=2) :: short
    integer :: n
    call omp_set_affinity_format ('%n|%N')
    n = omp_get_affinity_format (buf)
    if (n /= 5 .or. buf /= '%n|%N') call fail ('affinity_format', 'omp_get_affinity_format: '//buf)
    n = omp_get_affinity_format (short)
    if (n /= 5 .or. short /= '%n') call fail ('affinity_format', 'omp_get_affinity_format into 2: '//short)
    n = omp_capture_affinity (buf, '')
    if (n /= 3 .or. buf /= '0|1') call fail ('affinity_format', 'the format set: '//buf)
    n = omp_capture_affinity (buf, '%0.3n:%.4{num_threads}')
    if (n /= 8 .or. buf /= '000:   1') call fail ('affinity_format', 'widths: '//buf)
    n = omp_capture_affinity (short, '%.6n')
    if (n /= 6 .or. short /= '  ') call fail ('affinity_format', 'into 2: '//short)
    !$omp parallel num_threads (2) private (buf, n)
    n = omp_capture_affinity (buf, '%{thread_num}')
    if (n /= 1 .or. buf /= achar (iachar ('0') + omp_get_thread_num ())) &
      call fail ('affinity_format', 'thread_num in a team: '//buf)
    !$omp end parallel
    print '(a)', 'ok affinity_format'
  end subroutine

  subroutine check_integer8 ()
    integer :: bad
    bad = 0
    !$omp parallel num_threads (2) reduction (+:bad)
    if (omp_get_ancestor_thread_num (-huge (0_8)) /= -1) bad = bad + 1
    if (omp_get_ancestor_thread_num (huge (0_8)) /= -1) bad = bad + 1
    if (omp_get_team_size (-huge (0_8)) /= -1) bad = bad + 1
    if (omp_get_team_size (1_8) /= omp_get_num_threads ()) bad = bad + 1
    !$omp end parallel
    if (bad /= 0) call fail ('integer8', 'a level of +-HUGE(0_8) was taken for a level')
    print '(a)', 'ok integer8'
  end subroutine
end program
