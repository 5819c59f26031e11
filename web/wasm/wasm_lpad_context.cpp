// The threaded WebAssembly build's C++ exception landing-pad context, replacing the one in
// Emscripten 3.1.6's libunwind (system/lib/libunwind/src/Unwind-wasm.c, LLVM's, Apache-2.0 WITH
// LLVM-exception), which it follows line for line except for one word.
//
// Why: with -pthread, that libunwind declares `thread_local struct _Unwind_LandingPadContext
// __wasm_lpad_context`, but clang 14's WebAssembly exception lowering reads and writes the symbol as a
// plain global (LLVM 15 made both thread-local). The personality routine then never sees the landing
// pad's index, so no typed `catch` ever matches, only `catch (...)`: every AttentionError would leave
// the bindings as a bare WebAssembly.Exception instead of {ok: false, error}. Here the context is the
// plain global the compiler uses; the linker takes these definitions instead of libunwind's object.
// One context for every thread: two threads unwinding at the same moment would share it. In this
// core only the thread calling into it throws (the pool's tasks are products, which do not).
// Built only into attention_core_mt*.wasm (CMakeLists.txt); drop it with an Emscripten on LLVM >= 15.
#include <stdint.h>
#include <unwind.h>  // libunwind's (the build adds its include folder), not clang's

extern "C" {

_Unwind_Reason_Code __gxx_personality_wasm0(int version, _Unwind_Action actions, uint64_t exceptionClass, _Unwind_Exception* unwind_exception, _Unwind_Context* context);

struct _Unwind_LandingPadContext {
  uintptr_t lpad_index;  // landing pad index (input to the personality function)
  uintptr_t lsda;        // LSDA address (input)
  uintptr_t selector;    // selector value (its output)
};

/// The communication channel between compiler-generated landing pads and the personality function.
_Unwind_LandingPadContext __wasm_lpad_context;

/// Called in landing pads: the VM unwinds, so the compiler calls the personality function from here.
_Unwind_Reason_Code _Unwind_CallPersonality(void* exception_ptr) {
  auto* exception_object = static_cast<_Unwind_Exception*>(exception_ptr);
  __wasm_lpad_context.selector = 0;
  // Wasm has no two-phase unwinding: only the cleanup phase.
  return __gxx_personality_wasm0(1, _UA_CLEANUP_PHASE, exception_object->exception_class, exception_object, reinterpret_cast<_Unwind_Context*>(&__wasm_lpad_context));
}

/// Called by __cxa_throw.
_Unwind_Reason_Code _Unwind_RaiseException(_Unwind_Exception* exception_object) { __builtin_wasm_throw(0, exception_object); }

/// Called by __cxa_end_catch.
void _Unwind_DeleteException(_Unwind_Exception* exception_object) {
  if (exception_object->exception_cleanup != nullptr) (*exception_object->exception_cleanup)(_URC_FOREIGN_EXCEPTION_CAUGHT, exception_object);
}

/// The personality function sets the selector (index 1) through this.
void _Unwind_SetGR(_Unwind_Context* context, int index, uintptr_t value) {
  if (index != 1) return;
  reinterpret_cast<_Unwind_LandingPadContext*>(context)->selector = value;
}

/// Used as a 1-based index after a decrement by 1, hence + 2.
uintptr_t _Unwind_GetIP(_Unwind_Context* context) { return reinterpret_cast<_Unwind_LandingPadContext*>(context)->lpad_index + 2; }

void _Unwind_SetIP(_Unwind_Context*, uintptr_t) {}  // not used in wasm

uintptr_t _Unwind_GetLanguageSpecificData(_Unwind_Context* context) { return reinterpret_cast<_Unwind_LandingPadContext*>(context)->lsda; }

uintptr_t _Unwind_GetRegionStart(_Unwind_Context*) { return 0; }  // not used in wasm

}  // extern "C"
