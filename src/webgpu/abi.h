// The subset of Dawn's WebGPU C API (webgpu.h) that onnxgpu uses, declared by the project itself.
//
// No Dawn header ships with any package this project installs, so these declarations are written
// from the facts in shared/dawn-abi (read off the pinned build's generated header: bun-webgpu-linux-x64
// 0.1.7, Dawn of 2025-06). Every struct below has its size and every field's offset checked by a
// static_assert (the block at the end, generated from structs.txt), so a layout mistake fails the build
// instead of corrupting memory at run time. Enum values come from enums.txt, function signatures from
// functions.tsv, callback signatures from typedefs.tsv.
//
// Plain C declarations with the WGPU prefix, as in the real API; the functions are not linked but
// resolved at run time (see dawn.h), so each one is declared as a function-pointer type WGPUProc<Name>.
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define ONNXGPU_WGPU_ASSERT(cond) static_assert(cond, #cond)
#define ONNXGPU_WGPU_ALIGNOF(T) alignof(T)
extern "C" {
#else
#define ONNXGPU_WGPU_ASSERT(cond) _Static_assert(cond, #cond)
#define ONNXGPU_WGPU_ALIGNOF(T) _Alignof(T)
#endif

// ---- Scalars and constants -------------------------------------------------------------------
typedef uint32_t WGPUBool;
typedef uint64_t WGPUFlags;

#define WGPU_STRLEN SIZE_MAX
#define WGPU_WHOLE_SIZE UINT64_MAX
#define WGPU_WHOLE_MAP_SIZE SIZE_MAX
#define WGPU_LIMIT_U32_UNDEFINED UINT32_MAX
#define WGPU_LIMIT_U64_UNDEFINED UINT64_MAX
#define WGPU_QUERY_SET_INDEX_UNDEFINED UINT32_MAX

// ---- Handles (opaque, reference counted: AddRef/Release) -------------------------------------
typedef struct WGPUInstanceImpl* WGPUInstance;
typedef struct WGPUAdapterImpl* WGPUAdapter;
typedef struct WGPUDeviceImpl* WGPUDevice;
typedef struct WGPUQueueImpl* WGPUQueue;
typedef struct WGPUBufferImpl* WGPUBuffer;
typedef struct WGPUShaderModuleImpl* WGPUShaderModule;
typedef struct WGPUComputePipelineImpl* WGPUComputePipeline;
typedef struct WGPUBindGroupLayoutImpl* WGPUBindGroupLayout;
typedef struct WGPUBindGroupImpl* WGPUBindGroup;
typedef struct WGPUPipelineLayoutImpl* WGPUPipelineLayout;
typedef struct WGPUCommandEncoderImpl* WGPUCommandEncoder;
typedef struct WGPUComputePassEncoderImpl* WGPUComputePassEncoder;
typedef struct WGPUCommandBufferImpl* WGPUCommandBuffer;
typedef struct WGPUQuerySetImpl* WGPUQuerySet;
typedef struct WGPUSurfaceImpl* WGPUSurface;  // only as a (null) field of WGPURequestAdapterOptions

// ---- Enums (4 bytes each; Force32 pins the size) ---------------------------------------------
typedef enum WGPUSType {
  WGPUSType_ShaderSourceWGSL = 0x2,
  WGPUSType_DawnCacheDeviceDescriptor = 0x50007,
  WGPUSType_DawnTogglesDescriptor = 0x5000a,
  WGPUSType_DawnFakeBufferOOMForTesting = 0x50040,
  WGPUSType_Force32 = 0x7fffffff
} WGPUSType;

typedef enum WGPUBackendType {
  WGPUBackendType_Undefined = 0x0,
  WGPUBackendType_Null = 0x1,
  WGPUBackendType_WebGPU = 0x2,
  WGPUBackendType_D3D11 = 0x3,
  WGPUBackendType_D3D12 = 0x4,
  WGPUBackendType_Metal = 0x5,
  WGPUBackendType_Vulkan = 0x6,
  WGPUBackendType_OpenGL = 0x7,
  WGPUBackendType_OpenGLES = 0x8,
  WGPUBackendType_Force32 = 0x7fffffff
} WGPUBackendType;

typedef enum WGPUAdapterType {
  WGPUAdapterType_DiscreteGPU = 0x1,
  WGPUAdapterType_IntegratedGPU = 0x2,
  WGPUAdapterType_CPU = 0x3,
  WGPUAdapterType_Unknown = 0x4,
  WGPUAdapterType_Force32 = 0x7fffffff
} WGPUAdapterType;

typedef enum WGPUFeatureLevel {
  WGPUFeatureLevel_Undefined = 0x0,
  WGPUFeatureLevel_Compatibility = 0x1,
  WGPUFeatureLevel_Core = 0x2,
  WGPUFeatureLevel_Force32 = 0x7fffffff
} WGPUFeatureLevel;

typedef enum WGPUPowerPreference {
  WGPUPowerPreference_Undefined = 0x0,
  WGPUPowerPreference_LowPower = 0x1,
  WGPUPowerPreference_HighPerformance = 0x2,
  WGPUPowerPreference_Force32 = 0x7fffffff
} WGPUPowerPreference;

// Every feature of the pinned build, as an X-macro so that device.cpp can name them.
#define WGPU_FEATURE_NAMES(X) \
  X(DepthClipControl, 0x1) \
  X(Depth32FloatStencil8, 0x2) \
  X(TimestampQuery, 0x3) \
  X(TextureCompressionBC, 0x4) \
  X(TextureCompressionBCSliced3D, 0x5) \
  X(TextureCompressionETC2, 0x6) \
  X(TextureCompressionASTC, 0x7) \
  X(TextureCompressionASTCSliced3D, 0x8) \
  X(IndirectFirstInstance, 0x9) \
  X(ShaderF16, 0xa) \
  X(RG11B10UfloatRenderable, 0xb) \
  X(BGRA8UnormStorage, 0xc) \
  X(Float32Filterable, 0xd) \
  X(Float32Blendable, 0xe) \
  X(ClipDistances, 0xf) \
  X(DualSourceBlending, 0x10) \
  X(Subgroups, 0x11) \
  X(CoreFeaturesAndLimits, 0x12) \
  X(DawnInternalUsages, 0x50000) \
  X(DawnMultiPlanarFormats, 0x50001) \
  X(DawnNative, 0x50002) \
  X(ChromiumExperimentalTimestampQueryInsidePasses, 0x50003) \
  X(ImplicitDeviceSynchronization, 0x50004) \
  X(TransientAttachments, 0x50006) \
  X(MSAARenderToSingleSampled, 0x50007) \
  X(D3D11MultithreadProtected, 0x50008) \
  X(ANGLETextureSharing, 0x50009) \
  X(PixelLocalStorageCoherent, 0x5000a) \
  X(PixelLocalStorageNonCoherent, 0x5000b) \
  X(Unorm16TextureFormats, 0x5000c) \
  X(Snorm16TextureFormats, 0x5000d) \
  X(MultiPlanarFormatExtendedUsages, 0x5000e) \
  X(MultiPlanarFormatP010, 0x5000f) \
  X(HostMappedPointer, 0x50010) \
  X(MultiPlanarRenderTargets, 0x50011) \
  X(MultiPlanarFormatNv12a, 0x50012) \
  X(FramebufferFetch, 0x50013) \
  X(BufferMapExtendedUsages, 0x50014) \
  X(AdapterPropertiesMemoryHeaps, 0x50015) \
  X(AdapterPropertiesD3D, 0x50016) \
  X(AdapterPropertiesVk, 0x50017) \
  X(R8UnormStorage, 0x50018) \
  X(DawnFormatCapabilities, 0x50019) \
  X(DawnDrmFormatCapabilities, 0x5001a) \
  X(Norm16TextureFormats, 0x5001b) \
  X(MultiPlanarFormatNv16, 0x5001c) \
  X(MultiPlanarFormatNv24, 0x5001d) \
  X(MultiPlanarFormatP210, 0x5001e) \
  X(MultiPlanarFormatP410, 0x5001f) \
  X(SharedTextureMemoryVkDedicatedAllocation, 0x50020) \
  X(SharedTextureMemoryAHardwareBuffer, 0x50021) \
  X(SharedTextureMemoryDmaBuf, 0x50022) \
  X(SharedTextureMemoryOpaqueFD, 0x50023) \
  X(SharedTextureMemoryZirconHandle, 0x50024) \
  X(SharedTextureMemoryDXGISharedHandle, 0x50025) \
  X(SharedTextureMemoryD3D11Texture2D, 0x50026) \
  X(SharedTextureMemoryIOSurface, 0x50027) \
  X(SharedTextureMemoryEGLImage, 0x50028) \
  X(SharedFenceVkSemaphoreOpaqueFD, 0x50029) \
  X(SharedFenceSyncFD, 0x5002a) \
  X(SharedFenceVkSemaphoreZirconHandle, 0x5002b) \
  X(SharedFenceDXGISharedHandle, 0x5002c) \
  X(SharedFenceMTLSharedEvent, 0x5002d) \
  X(SharedBufferMemoryD3D12Resource, 0x5002e) \
  X(StaticSamplers, 0x5002f) \
  X(YCbCrVulkanSamplers, 0x50030) \
  X(ShaderModuleCompilationOptions, 0x50031) \
  X(DawnLoadResolveTexture, 0x50032) \
  X(DawnPartialLoadResolveTexture, 0x50033) \
  X(MultiDrawIndirect, 0x50034) \
  X(DawnTexelCopyBufferRowAlignment, 0x50035) \
  X(FlexibleTextureViews, 0x50036) \
  X(ChromiumExperimentalSubgroupMatrix, 0x50037) \
  X(SharedFenceEGLSync, 0x50038) \
  X(DawnDeviceAllocatorControl, 0x50039) \
  X(TextureFormatsTier1, 0x5003a)

typedef enum WGPUFeatureName {
#define ONNXGPU_WGPU_FEATURE_ENUM(name, value) WGPUFeatureName_##name = value,
  WGPU_FEATURE_NAMES(ONNXGPU_WGPU_FEATURE_ENUM)
#undef ONNXGPU_WGPU_FEATURE_ENUM
  WGPUFeatureName_Force32 = 0x7fffffff
} WGPUFeatureName;

typedef enum WGPUCallbackMode {
  WGPUCallbackMode_WaitAnyOnly = 0x1,
  WGPUCallbackMode_AllowProcessEvents = 0x2,
  WGPUCallbackMode_AllowSpontaneous = 0x3,
  WGPUCallbackMode_Force32 = 0x7fffffff
} WGPUCallbackMode;

typedef enum WGPUStatus {
  WGPUStatus_Success = 0x1,
  WGPUStatus_Error = 0x2,
  WGPUStatus_Force32 = 0x7fffffff
} WGPUStatus;

typedef enum WGPUWaitStatus {
  WGPUWaitStatus_Success = 0x1,
  WGPUWaitStatus_TimedOut = 0x2,
  WGPUWaitStatus_Error = 0x3,
  WGPUWaitStatus_Force32 = 0x7fffffff
} WGPUWaitStatus;

typedef enum WGPURequestAdapterStatus {
  WGPURequestAdapterStatus_Success = 0x1,
  WGPURequestAdapterStatus_CallbackCancelled = 0x2,
  WGPURequestAdapterStatus_Unavailable = 0x3,
  WGPURequestAdapterStatus_Error = 0x4,
  WGPURequestAdapterStatus_Force32 = 0x7fffffff
} WGPURequestAdapterStatus;

typedef enum WGPURequestDeviceStatus {
  WGPURequestDeviceStatus_Success = 0x1,
  WGPURequestDeviceStatus_CallbackCancelled = 0x2,
  WGPURequestDeviceStatus_Error = 0x3,
  WGPURequestDeviceStatus_Force32 = 0x7fffffff
} WGPURequestDeviceStatus;

typedef enum WGPUCreatePipelineAsyncStatus {
  WGPUCreatePipelineAsyncStatus_Success = 0x1,
  WGPUCreatePipelineAsyncStatus_CallbackCancelled = 0x2,
  WGPUCreatePipelineAsyncStatus_ValidationError = 0x3,
  WGPUCreatePipelineAsyncStatus_InternalError = 0x4,
  WGPUCreatePipelineAsyncStatus_Force32 = 0x7fffffff
} WGPUCreatePipelineAsyncStatus;

typedef enum WGPUMapAsyncStatus {
  WGPUMapAsyncStatus_Success = 0x1,
  WGPUMapAsyncStatus_CallbackCancelled = 0x2,
  WGPUMapAsyncStatus_Error = 0x3,
  WGPUMapAsyncStatus_Aborted = 0x4,
  WGPUMapAsyncStatus_Force32 = 0x7fffffff
} WGPUMapAsyncStatus;

typedef enum WGPUQueueWorkDoneStatus {
  WGPUQueueWorkDoneStatus_Success = 0x1,
  WGPUQueueWorkDoneStatus_CallbackCancelled = 0x2,
  WGPUQueueWorkDoneStatus_Error = 0x3,
  WGPUQueueWorkDoneStatus_Force32 = 0x7fffffff
} WGPUQueueWorkDoneStatus;

typedef enum WGPUPopErrorScopeStatus {
  WGPUPopErrorScopeStatus_Success = 0x1,
  WGPUPopErrorScopeStatus_CallbackCancelled = 0x2,
  WGPUPopErrorScopeStatus_Error = 0x3,
  WGPUPopErrorScopeStatus_Force32 = 0x7fffffff
} WGPUPopErrorScopeStatus;

typedef enum WGPUCompilationInfoRequestStatus {
  WGPUCompilationInfoRequestStatus_Success = 0x1,
  WGPUCompilationInfoRequestStatus_CallbackCancelled = 0x2,
  WGPUCompilationInfoRequestStatus_Force32 = 0x7fffffff
} WGPUCompilationInfoRequestStatus;

typedef enum WGPUCompilationMessageType {
  WGPUCompilationMessageType_Error = 0x1,
  WGPUCompilationMessageType_Warning = 0x2,
  WGPUCompilationMessageType_Info = 0x3,
  WGPUCompilationMessageType_Force32 = 0x7fffffff
} WGPUCompilationMessageType;

typedef enum WGPUErrorFilter {
  WGPUErrorFilter_Validation = 0x1,
  WGPUErrorFilter_OutOfMemory = 0x2,
  WGPUErrorFilter_Internal = 0x3,
  WGPUErrorFilter_Force32 = 0x7fffffff
} WGPUErrorFilter;

typedef enum WGPUErrorType {
  WGPUErrorType_NoError = 0x1,
  WGPUErrorType_Validation = 0x2,
  WGPUErrorType_OutOfMemory = 0x3,
  WGPUErrorType_Internal = 0x4,
  WGPUErrorType_Unknown = 0x5,
  WGPUErrorType_Force32 = 0x7fffffff
} WGPUErrorType;

typedef enum WGPUDeviceLostReason {
  WGPUDeviceLostReason_Unknown = 0x1,
  WGPUDeviceLostReason_Destroyed = 0x2,
  WGPUDeviceLostReason_CallbackCancelled = 0x3,
  WGPUDeviceLostReason_FailedCreation = 0x4,
  WGPUDeviceLostReason_Force32 = 0x7fffffff
} WGPUDeviceLostReason;

typedef enum WGPUQueryType {
  WGPUQueryType_Occlusion = 0x1,
  WGPUQueryType_Timestamp = 0x2,
  WGPUQueryType_Force32 = 0x7fffffff
} WGPUQueryType;

// ---- Bit flags (64-bit) ----------------------------------------------------------------------
typedef WGPUFlags WGPUBufferUsage;
static const WGPUBufferUsage WGPUBufferUsage_None = 0x0;
static const WGPUBufferUsage WGPUBufferUsage_MapRead = 0x1;
static const WGPUBufferUsage WGPUBufferUsage_MapWrite = 0x2;
static const WGPUBufferUsage WGPUBufferUsage_CopySrc = 0x4;
static const WGPUBufferUsage WGPUBufferUsage_CopyDst = 0x8;
static const WGPUBufferUsage WGPUBufferUsage_Uniform = 0x40;
static const WGPUBufferUsage WGPUBufferUsage_Storage = 0x80;
static const WGPUBufferUsage WGPUBufferUsage_Indirect = 0x100;
static const WGPUBufferUsage WGPUBufferUsage_QueryResolve = 0x200;

typedef WGPUFlags WGPUMapMode;
static const WGPUMapMode WGPUMapMode_None = 0x0;
static const WGPUMapMode WGPUMapMode_Read = 0x1;
static const WGPUMapMode WGPUMapMode_Write = 0x2;

// ---- Structs ---------------------------------------------------------------------------------
// A string: data + length (WGPU_STRLEN = null-terminated). Output strings are never null-terminated.
typedef struct WGPUStringView {
  const char* data;
  size_t length;
} WGPUStringView;

typedef struct WGPUChainedStruct {
  struct WGPUChainedStruct* next;
  WGPUSType sType;
} WGPUChainedStruct;

typedef struct WGPUFuture {
  uint64_t id;
} WGPUFuture;

typedef struct WGPUFutureWaitInfo {
  WGPUFuture future;
  WGPUBool completed;
} WGPUFutureWaitInfo;

// ---- Callbacks (userdata1, userdata2 last) ---------------------------------------------------
struct WGPUCompilationInfo;
typedef void (*WGPURequestAdapterCallback)(WGPURequestAdapterStatus status, WGPUAdapter adapter,
                                           WGPUStringView message, void* userdata1, void* userdata2);
typedef void (*WGPURequestDeviceCallback)(WGPURequestDeviceStatus status, WGPUDevice device,
                                          WGPUStringView message, void* userdata1, void* userdata2);
typedef void (*WGPUDeviceLostCallback)(const WGPUDevice* device, WGPUDeviceLostReason reason,
                                       WGPUStringView message, void* userdata1, void* userdata2);
typedef void (*WGPUUncapturedErrorCallback)(const WGPUDevice* device, WGPUErrorType type,
                                            WGPUStringView message, void* userdata1, void* userdata2);
typedef void (*WGPUBufferMapCallback)(WGPUMapAsyncStatus status, WGPUStringView message,
                                      void* userdata1, void* userdata2);
typedef void (*WGPUQueueWorkDoneCallback)(WGPUQueueWorkDoneStatus status, WGPUStringView message,
                                          void* userdata1, void* userdata2);
typedef void (*WGPUPopErrorScopeCallback)(WGPUPopErrorScopeStatus status, WGPUErrorType type,
                                          WGPUStringView message, void* userdata1, void* userdata2);
typedef void (*WGPUCreateComputePipelineAsyncCallback)(WGPUCreatePipelineAsyncStatus status,
                                                      WGPUComputePipeline pipeline, WGPUStringView message,
                                                      void* userdata1, void* userdata2);
// Dawn's blob cache (typedefs.tsv): load returns the value's size (0: none) and copies it when
// `value` has room; store keeps a value.
typedef size_t (*WGPUDawnLoadCacheDataFunction)(const void* key, size_t keySize, void* value, size_t valueSize,
                                                void* userdata);
typedef void (*WGPUDawnStoreCacheDataFunction)(const void* key, size_t keySize, const void* value,
                                               size_t valueSize, void* userdata);
typedef void (*WGPUCompilationInfoCallback)(WGPUCompilationInfoRequestStatus status,
                                            const struct WGPUCompilationInfo* info, void* userdata1,
                                            void* userdata2);

// Dawn's instance capabilities (the pinned build embeds them in WGPUInstanceDescriptor).
typedef struct WGPUInstanceCapabilities {
  WGPUChainedStruct* nextInChain;
  WGPUBool timedWaitAnyEnable;
  size_t timedWaitAnyMaxCount;
} WGPUInstanceCapabilities;

typedef struct WGPUInstanceDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUInstanceCapabilities capabilities;
} WGPUInstanceDescriptor;

typedef struct WGPUDawnTogglesDescriptor {
  WGPUChainedStruct chain;
  size_t enabledToggleCount;
  const char* const* enabledToggles;
  size_t disabledToggleCount;
  const char* const* disabledToggles;
} WGPUDawnTogglesDescriptor;

typedef struct WGPUDawnCacheDeviceDescriptor {
  WGPUChainedStruct chain;
  WGPUStringView isolationKey;
  WGPUDawnLoadCacheDataFunction loadDataFunction;
  WGPUDawnStoreCacheDataFunction storeDataFunction;
  void* functionUserdata;
} WGPUDawnCacheDeviceDescriptor;

typedef struct WGPURequestAdapterOptions {
  WGPUChainedStruct* nextInChain;
  WGPUFeatureLevel featureLevel;
  WGPUPowerPreference powerPreference;
  WGPUBool forceFallbackAdapter;
  WGPUBackendType backendType;
  WGPUSurface compatibleSurface;
} WGPURequestAdapterOptions;

typedef struct WGPURequestAdapterCallbackInfo {
  WGPUChainedStruct* nextInChain;
  WGPUCallbackMode mode;
  WGPURequestAdapterCallback callback;
  void* userdata1;
  void* userdata2;
} WGPURequestAdapterCallbackInfo;

typedef struct WGPUAdapterInfo {
  WGPUChainedStruct* nextInChain;
  WGPUStringView vendor;
  WGPUStringView architecture;
  WGPUStringView device;
  WGPUStringView description;
  WGPUBackendType backendType;
  WGPUAdapterType adapterType;
  uint32_t vendorID;
  uint32_t deviceID;
  uint32_t subgroupMinSize;
  uint32_t subgroupMaxSize;
} WGPUAdapterInfo;

// Every limit; in a request, WGPU_LIMIT_*_UNDEFINED means "the default".
typedef struct WGPULimits {
  WGPUChainedStruct* nextInChain;
  uint32_t maxTextureDimension1D;
  uint32_t maxTextureDimension2D;
  uint32_t maxTextureDimension3D;
  uint32_t maxTextureArrayLayers;
  uint32_t maxBindGroups;
  uint32_t maxBindGroupsPlusVertexBuffers;
  uint32_t maxBindingsPerBindGroup;
  uint32_t maxDynamicUniformBuffersPerPipelineLayout;
  uint32_t maxDynamicStorageBuffersPerPipelineLayout;
  uint32_t maxSampledTexturesPerShaderStage;
  uint32_t maxSamplersPerShaderStage;
  uint32_t maxStorageBuffersPerShaderStage;
  uint32_t maxStorageTexturesPerShaderStage;
  uint32_t maxUniformBuffersPerShaderStage;
  uint64_t maxUniformBufferBindingSize;
  uint64_t maxStorageBufferBindingSize;
  uint32_t minUniformBufferOffsetAlignment;
  uint32_t minStorageBufferOffsetAlignment;
  uint32_t maxVertexBuffers;
  uint64_t maxBufferSize;
  uint32_t maxVertexAttributes;
  uint32_t maxVertexBufferArrayStride;
  uint32_t maxInterStageShaderVariables;
  uint32_t maxColorAttachments;
  uint32_t maxColorAttachmentBytesPerSample;
  uint32_t maxComputeWorkgroupStorageSize;
  uint32_t maxComputeInvocationsPerWorkgroup;
  uint32_t maxComputeWorkgroupSizeX;
  uint32_t maxComputeWorkgroupSizeY;
  uint32_t maxComputeWorkgroupSizeZ;
  uint32_t maxComputeWorkgroupsPerDimension;
  uint32_t maxImmediateSize;
} WGPULimits;

// Filled by wgpuAdapterGetFeatures; free with wgpuSupportedFeaturesFreeMembers.
typedef struct WGPUSupportedFeatures {
  size_t featureCount;
  const WGPUFeatureName* features;
} WGPUSupportedFeatures;

typedef struct WGPUQueueDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
} WGPUQueueDescriptor;

typedef struct WGPUDeviceLostCallbackInfo {
  WGPUChainedStruct* nextInChain;
  WGPUCallbackMode mode;
  WGPUDeviceLostCallback callback;
  void* userdata1;
  void* userdata2;
} WGPUDeviceLostCallbackInfo;

typedef struct WGPUUncapturedErrorCallbackInfo {
  WGPUChainedStruct* nextInChain;
  WGPUUncapturedErrorCallback callback;
  void* userdata1;
  void* userdata2;
} WGPUUncapturedErrorCallbackInfo;

typedef struct WGPUDeviceDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  size_t requiredFeatureCount;
  const WGPUFeatureName* requiredFeatures;
  const WGPULimits* requiredLimits;
  WGPUQueueDescriptor defaultQueue;
  WGPUDeviceLostCallbackInfo deviceLostCallbackInfo;
  WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
} WGPUDeviceDescriptor;

typedef struct WGPURequestDeviceCallbackInfo {
  WGPUChainedStruct* nextInChain;
  WGPUCallbackMode mode;
  WGPURequestDeviceCallback callback;
  void* userdata1;
  void* userdata2;
} WGPURequestDeviceCallbackInfo;

typedef struct WGPUBufferDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  WGPUBufferUsage usage;
  uint64_t size;
  WGPUBool mappedAtCreation;
} WGPUBufferDescriptor;

// Chained to WGPUBufferDescriptor by tests: makes the allocation fail as if out of memory.
typedef struct WGPUDawnFakeBufferOOMForTesting {
  WGPUChainedStruct chain;
  WGPUBool fakeOOMAtWireClientMap;
  WGPUBool fakeOOMAtNativeMap;
  WGPUBool fakeOOMAtDevice;
} WGPUDawnFakeBufferOOMForTesting;

typedef struct WGPUBufferMapCallbackInfo {
  WGPUChainedStruct* nextInChain;
  WGPUCallbackMode mode;
  WGPUBufferMapCallback callback;
  void* userdata1;
  void* userdata2;
} WGPUBufferMapCallbackInfo;

typedef struct WGPUQueueWorkDoneCallbackInfo {
  WGPUChainedStruct* nextInChain;
  WGPUCallbackMode mode;
  WGPUQueueWorkDoneCallback callback;
  void* userdata1;
  void* userdata2;
} WGPUQueueWorkDoneCallbackInfo;

typedef struct WGPUPopErrorScopeCallbackInfo {
  WGPUChainedStruct* nextInChain;
  WGPUCallbackMode mode;
  WGPUPopErrorScopeCallback callback;
  void* userdata1;
  void* userdata2;
} WGPUPopErrorScopeCallbackInfo;

typedef struct WGPUCreateComputePipelineAsyncCallbackInfo {
  WGPUChainedStruct* nextInChain;
  WGPUCallbackMode mode;
  WGPUCreateComputePipelineAsyncCallback callback;
  void* userdata1;
  void* userdata2;
} WGPUCreateComputePipelineAsyncCallbackInfo;

typedef struct WGPUShaderModuleDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
} WGPUShaderModuleDescriptor;

// Chained to WGPUShaderModuleDescriptor (sType = WGPUSType_ShaderSourceWGSL).
typedef struct WGPUShaderSourceWGSL {
  WGPUChainedStruct chain;
  WGPUStringView code;
} WGPUShaderSourceWGSL;

// lineNum and linePos are 1-based (0 when the message has no position).
typedef struct WGPUCompilationMessage {
  WGPUChainedStruct* nextInChain;
  WGPUStringView message;
  WGPUCompilationMessageType type;
  uint64_t lineNum;
  uint64_t linePos;
  uint64_t offset;
  uint64_t length;
} WGPUCompilationMessage;

typedef struct WGPUCompilationInfo {
  WGPUChainedStruct* nextInChain;
  size_t messageCount;
  const WGPUCompilationMessage* messages;
} WGPUCompilationInfo;

typedef struct WGPUCompilationInfoCallbackInfo {
  WGPUChainedStruct* nextInChain;
  WGPUCallbackMode mode;
  WGPUCompilationInfoCallback callback;
  void* userdata1;
  void* userdata2;
} WGPUCompilationInfoCallbackInfo;

typedef struct WGPUConstantEntry {
  WGPUChainedStruct* nextInChain;
  WGPUStringView key;
  double value;
} WGPUConstantEntry;

typedef struct WGPUComputeState {
  WGPUChainedStruct* nextInChain;
  WGPUShaderModule module;
  WGPUStringView entryPoint;
  size_t constantCount;
  const WGPUConstantEntry* constants;
} WGPUComputeState;

// layout = NULL means "auto" (derived from the shader).
typedef struct WGPUComputePipelineDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  WGPUPipelineLayout layout;
  WGPUComputeState compute;
} WGPUComputePipelineDescriptor;

// Only the buffer fields are used by onnxgpu (sampler and textureView stay NULL).
typedef struct WGPUBindGroupEntry {
  WGPUChainedStruct* nextInChain;
  uint32_t binding;
  WGPUBuffer buffer;
  uint64_t offset;
  uint64_t size;
  void* sampler;      // WGPUSampler
  void* textureView;  // WGPUTextureView
} WGPUBindGroupEntry;

typedef struct WGPUBindGroupDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  WGPUBindGroupLayout layout;
  size_t entryCount;
  const WGPUBindGroupEntry* entries;
} WGPUBindGroupDescriptor;

typedef struct WGPUCommandEncoderDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
} WGPUCommandEncoderDescriptor;

typedef struct WGPUPassTimestampWrites {
  WGPUChainedStruct* nextInChain;
  WGPUQuerySet querySet;
  uint32_t beginningOfPassWriteIndex;
  uint32_t endOfPassWriteIndex;
} WGPUPassTimestampWrites;

typedef struct WGPUComputePassDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  const WGPUPassTimestampWrites* timestampWrites;
} WGPUComputePassDescriptor;

typedef struct WGPUCommandBufferDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
} WGPUCommandBufferDescriptor;

typedef struct WGPUQuerySetDescriptor {
  WGPUChainedStruct* nextInChain;
  WGPUStringView label;
  WGPUQueryType type;
  uint32_t count;
} WGPUQuerySetDescriptor;

// ---- Functions (resolved by name "wgpu<Name>" at run time, see dawn.h) -----------------------
// X(Name, ReturnType, (parameter types)). The list is also what dawn.cpp resolves.
#define WGPU_FUNCTIONS(X) \
  X(CreateInstance, WGPUInstance, (const WGPUInstanceDescriptor*)) \
  X(InstanceAddRef, void, (WGPUInstance)) \
  X(InstanceRelease, void, (WGPUInstance)) \
  X(InstanceRequestAdapter, WGPUFuture, (WGPUInstance, const WGPURequestAdapterOptions*, WGPURequestAdapterCallbackInfo)) \
  X(InstanceWaitAny, WGPUWaitStatus, (WGPUInstance, size_t, WGPUFutureWaitInfo*, uint64_t)) \
  X(InstanceProcessEvents, void, (WGPUInstance)) \
  X(AdapterAddRef, void, (WGPUAdapter)) \
  X(AdapterRelease, void, (WGPUAdapter)) \
  X(AdapterGetInfo, WGPUStatus, (WGPUAdapter, WGPUAdapterInfo*)) \
  X(AdapterInfoFreeMembers, void, (WGPUAdapterInfo)) \
  X(AdapterGetLimits, WGPUStatus, (WGPUAdapter, WGPULimits*)) \
  X(AdapterGetFeatures, void, (WGPUAdapter, WGPUSupportedFeatures*)) \
  X(AdapterHasFeature, WGPUBool, (WGPUAdapter, WGPUFeatureName)) \
  X(SupportedFeaturesFreeMembers, void, (WGPUSupportedFeatures)) \
  X(AdapterRequestDevice, WGPUFuture, (WGPUAdapter, const WGPUDeviceDescriptor*, WGPURequestDeviceCallbackInfo)) \
  X(DeviceAddRef, void, (WGPUDevice)) \
  X(DeviceRelease, void, (WGPUDevice)) \
  X(DeviceGetLimits, WGPUStatus, (WGPUDevice, WGPULimits*)) \
  X(DeviceHasFeature, WGPUBool, (WGPUDevice, WGPUFeatureName)) \
  X(DeviceGetQueue, WGPUQueue, (WGPUDevice)) \
  X(DevicePushErrorScope, void, (WGPUDevice, WGPUErrorFilter)) \
  X(DevicePopErrorScope, WGPUFuture, (WGPUDevice, WGPUPopErrorScopeCallbackInfo)) \
  X(DeviceCreateBuffer, WGPUBuffer, (WGPUDevice, const WGPUBufferDescriptor*)) \
  X(DeviceCreateShaderModule, WGPUShaderModule, (WGPUDevice, const WGPUShaderModuleDescriptor*)) \
  X(DeviceCreateComputePipeline, WGPUComputePipeline, (WGPUDevice, const WGPUComputePipelineDescriptor*)) \
  X(DeviceCreateComputePipelineAsync, WGPUFuture, (WGPUDevice, const WGPUComputePipelineDescriptor*, WGPUCreateComputePipelineAsyncCallbackInfo)) \
  X(DeviceCreateBindGroup, WGPUBindGroup, (WGPUDevice, const WGPUBindGroupDescriptor*)) \
  X(DeviceCreateCommandEncoder, WGPUCommandEncoder, (WGPUDevice, const WGPUCommandEncoderDescriptor*)) \
  X(DeviceCreateQuerySet, WGPUQuerySet, (WGPUDevice, const WGPUQuerySetDescriptor*)) \
  X(QueueAddRef, void, (WGPUQueue)) \
  X(QueueRelease, void, (WGPUQueue)) \
  X(QueueSubmit, void, (WGPUQueue, size_t, const WGPUCommandBuffer*)) \
  X(QueueWriteBuffer, void, (WGPUQueue, WGPUBuffer, uint64_t, const void*, size_t)) \
  X(QueueOnSubmittedWorkDone, WGPUFuture, (WGPUQueue, WGPUQueueWorkDoneCallbackInfo)) \
  X(BufferAddRef, void, (WGPUBuffer)) \
  X(BufferRelease, void, (WGPUBuffer)) \
  X(BufferDestroy, void, (WGPUBuffer)) \
  X(BufferGetSize, uint64_t, (WGPUBuffer)) \
  X(BufferMapAsync, WGPUFuture, (WGPUBuffer, WGPUMapMode, size_t, size_t, WGPUBufferMapCallbackInfo)) \
  X(BufferGetConstMappedRange, const void*, (WGPUBuffer, size_t, size_t)) \
  X(BufferGetMappedRange, void*, (WGPUBuffer, size_t, size_t)) \
  X(BufferUnmap, void, (WGPUBuffer)) \
  X(ShaderModuleAddRef, void, (WGPUShaderModule)) \
  X(ShaderModuleRelease, void, (WGPUShaderModule)) \
  X(ShaderModuleGetCompilationInfo, WGPUFuture, (WGPUShaderModule, WGPUCompilationInfoCallbackInfo)) \
  X(ComputePipelineAddRef, void, (WGPUComputePipeline)) \
  X(ComputePipelineRelease, void, (WGPUComputePipeline)) \
  X(ComputePipelineGetBindGroupLayout, WGPUBindGroupLayout, (WGPUComputePipeline, uint32_t)) \
  X(BindGroupLayoutAddRef, void, (WGPUBindGroupLayout)) \
  X(BindGroupLayoutRelease, void, (WGPUBindGroupLayout)) \
  X(BindGroupAddRef, void, (WGPUBindGroup)) \
  X(BindGroupRelease, void, (WGPUBindGroup)) \
  X(CommandEncoderAddRef, void, (WGPUCommandEncoder)) \
  X(CommandEncoderRelease, void, (WGPUCommandEncoder)) \
  X(CommandEncoderBeginComputePass, WGPUComputePassEncoder, (WGPUCommandEncoder, const WGPUComputePassDescriptor*)) \
  X(CommandEncoderCopyBufferToBuffer, void, (WGPUCommandEncoder, WGPUBuffer, uint64_t, WGPUBuffer, uint64_t, uint64_t)) \
  X(CommandEncoderClearBuffer, void, (WGPUCommandEncoder, WGPUBuffer, uint64_t, uint64_t)) \
  X(CommandEncoderResolveQuerySet, void, (WGPUCommandEncoder, WGPUQuerySet, uint32_t, uint32_t, WGPUBuffer, uint64_t)) \
  X(CommandEncoderFinish, WGPUCommandBuffer, (WGPUCommandEncoder, const WGPUCommandBufferDescriptor*)) \
  X(ComputePassEncoderAddRef, void, (WGPUComputePassEncoder)) \
  X(ComputePassEncoderRelease, void, (WGPUComputePassEncoder)) \
  X(ComputePassEncoderSetPipeline, void, (WGPUComputePassEncoder, WGPUComputePipeline)) \
  X(ComputePassEncoderSetBindGroup, void, (WGPUComputePassEncoder, uint32_t, WGPUBindGroup, size_t, const uint32_t*)) \
  X(ComputePassEncoderDispatchWorkgroups, void, (WGPUComputePassEncoder, uint32_t, uint32_t, uint32_t)) \
  X(ComputePassEncoderEnd, void, (WGPUComputePassEncoder)) \
  X(CommandBufferAddRef, void, (WGPUCommandBuffer)) \
  X(CommandBufferRelease, void, (WGPUCommandBuffer)) \
  X(QuerySetAddRef, void, (WGPUQuerySet)) \
  X(QuerySetRelease, void, (WGPUQuerySet))

#define ONNXGPU_WGPU_PROC_TYPEDEF(name, ret, params) typedef ret(*WGPUProc##name) params;
WGPU_FUNCTIONS(ONNXGPU_WGPU_PROC_TYPEDEF)
#undef ONNXGPU_WGPU_PROC_TYPEDEF

// ---- Layout checks: size, alignment and every field's offset, from shared/dawn-abi/structs.txt ----
ONNXGPU_WGPU_ASSERT(sizeof(WGPUStringView) == 16 && ONNXGPU_WGPU_ALIGNOF(WGPUStringView) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUStringView, data) == 0 && sizeof(((WGPUStringView*)0)->data) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUStringView, length) == 8 && sizeof(((WGPUStringView*)0)->length) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUChainedStruct) == 16 && ONNXGPU_WGPU_ALIGNOF(WGPUChainedStruct) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUChainedStruct, next) == 0 && sizeof(((WGPUChainedStruct*)0)->next) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUChainedStruct, sType) == 8 && sizeof(((WGPUChainedStruct*)0)->sType) == 4);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUFuture) == 8 && ONNXGPU_WGPU_ALIGNOF(WGPUFuture) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUFuture, id) == 0 && sizeof(((WGPUFuture*)0)->id) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUFutureWaitInfo) == 16 && ONNXGPU_WGPU_ALIGNOF(WGPUFutureWaitInfo) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUFutureWaitInfo, future) == 0 && sizeof(((WGPUFutureWaitInfo*)0)->future) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUFutureWaitInfo, completed) == 8 && sizeof(((WGPUFutureWaitInfo*)0)->completed) == 4);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUInstanceCapabilities) == 24 && ONNXGPU_WGPU_ALIGNOF(WGPUInstanceCapabilities) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUInstanceCapabilities, nextInChain) == 0 && sizeof(((WGPUInstanceCapabilities*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUInstanceCapabilities, timedWaitAnyEnable) == 8 && sizeof(((WGPUInstanceCapabilities*)0)->timedWaitAnyEnable) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUInstanceCapabilities, timedWaitAnyMaxCount) == 16 && sizeof(((WGPUInstanceCapabilities*)0)->timedWaitAnyMaxCount) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUInstanceDescriptor) == 32 && ONNXGPU_WGPU_ALIGNOF(WGPUInstanceDescriptor) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUInstanceDescriptor, nextInChain) == 0 && sizeof(((WGPUInstanceDescriptor*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUInstanceDescriptor, capabilities) == 8 && sizeof(((WGPUInstanceDescriptor*)0)->capabilities) == 24);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUDawnTogglesDescriptor) == 48 && ONNXGPU_WGPU_ALIGNOF(WGPUDawnTogglesDescriptor) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDawnTogglesDescriptor, chain) == 0 && sizeof(((WGPUDawnTogglesDescriptor*)0)->chain) == 16);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDawnTogglesDescriptor, enabledToggleCount) == 16 && sizeof(((WGPUDawnTogglesDescriptor*)0)->enabledToggleCount) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDawnTogglesDescriptor, enabledToggles) == 24 && sizeof(((WGPUDawnTogglesDescriptor*)0)->enabledToggles) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDawnTogglesDescriptor, disabledToggleCount) == 32 && sizeof(((WGPUDawnTogglesDescriptor*)0)->disabledToggleCount) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDawnTogglesDescriptor, disabledToggles) == 40 && sizeof(((WGPUDawnTogglesDescriptor*)0)->disabledToggles) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUDawnCacheDeviceDescriptor) == 56 && ONNXGPU_WGPU_ALIGNOF(WGPUDawnCacheDeviceDescriptor) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDawnCacheDeviceDescriptor, chain) == 0 && sizeof(((WGPUDawnCacheDeviceDescriptor*)0)->chain) == 16);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDawnCacheDeviceDescriptor, isolationKey) == 16 && sizeof(((WGPUDawnCacheDeviceDescriptor*)0)->isolationKey) == 16);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDawnCacheDeviceDescriptor, loadDataFunction) == 32 && sizeof(((WGPUDawnCacheDeviceDescriptor*)0)->loadDataFunction) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDawnCacheDeviceDescriptor, storeDataFunction) == 40 && sizeof(((WGPUDawnCacheDeviceDescriptor*)0)->storeDataFunction) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDawnCacheDeviceDescriptor, functionUserdata) == 48 && sizeof(((WGPUDawnCacheDeviceDescriptor*)0)->functionUserdata) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUCreateComputePipelineAsyncCallbackInfo) == 40 && ONNXGPU_WGPU_ALIGNOF(WGPUCreateComputePipelineAsyncCallbackInfo) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCreateComputePipelineAsyncCallbackInfo, mode) == 8 && sizeof(((WGPUCreateComputePipelineAsyncCallbackInfo*)0)->mode) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCreateComputePipelineAsyncCallbackInfo, callback) == 16 && sizeof(((WGPUCreateComputePipelineAsyncCallbackInfo*)0)->callback) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCreateComputePipelineAsyncCallbackInfo, userdata1) == 24 && sizeof(((WGPUCreateComputePipelineAsyncCallbackInfo*)0)->userdata1) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCreateComputePipelineAsyncCallbackInfo, userdata2) == 32 && sizeof(((WGPUCreateComputePipelineAsyncCallbackInfo*)0)->userdata2) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPURequestAdapterOptions) == 32 && ONNXGPU_WGPU_ALIGNOF(WGPURequestAdapterOptions) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPURequestAdapterOptions, nextInChain) == 0 && sizeof(((WGPURequestAdapterOptions*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPURequestAdapterOptions, featureLevel) == 8 && sizeof(((WGPURequestAdapterOptions*)0)->featureLevel) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPURequestAdapterOptions, powerPreference) == 12 && sizeof(((WGPURequestAdapterOptions*)0)->powerPreference) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPURequestAdapterOptions, forceFallbackAdapter) == 16 && sizeof(((WGPURequestAdapterOptions*)0)->forceFallbackAdapter) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPURequestAdapterOptions, backendType) == 20 && sizeof(((WGPURequestAdapterOptions*)0)->backendType) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPURequestAdapterOptions, compatibleSurface) == 24 && sizeof(((WGPURequestAdapterOptions*)0)->compatibleSurface) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPURequestAdapterCallbackInfo) == 40 && ONNXGPU_WGPU_ALIGNOF(WGPURequestAdapterCallbackInfo) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPURequestAdapterCallbackInfo, nextInChain) == 0 && sizeof(((WGPURequestAdapterCallbackInfo*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPURequestAdapterCallbackInfo, mode) == 8 && sizeof(((WGPURequestAdapterCallbackInfo*)0)->mode) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPURequestAdapterCallbackInfo, callback) == 16 && sizeof(((WGPURequestAdapterCallbackInfo*)0)->callback) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPURequestAdapterCallbackInfo, userdata1) == 24 && sizeof(((WGPURequestAdapterCallbackInfo*)0)->userdata1) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPURequestAdapterCallbackInfo, userdata2) == 32 && sizeof(((WGPURequestAdapterCallbackInfo*)0)->userdata2) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUAdapterInfo) == 96 && ONNXGPU_WGPU_ALIGNOF(WGPUAdapterInfo) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUAdapterInfo, nextInChain) == 0 && sizeof(((WGPUAdapterInfo*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUAdapterInfo, vendor) == 8 && sizeof(((WGPUAdapterInfo*)0)->vendor) == 16);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUAdapterInfo, architecture) == 24 && sizeof(((WGPUAdapterInfo*)0)->architecture) == 16);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUAdapterInfo, device) == 40 && sizeof(((WGPUAdapterInfo*)0)->device) == 16);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUAdapterInfo, description) == 56 && sizeof(((WGPUAdapterInfo*)0)->description) == 16);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUAdapterInfo, backendType) == 72 && sizeof(((WGPUAdapterInfo*)0)->backendType) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUAdapterInfo, adapterType) == 76 && sizeof(((WGPUAdapterInfo*)0)->adapterType) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUAdapterInfo, vendorID) == 80 && sizeof(((WGPUAdapterInfo*)0)->vendorID) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUAdapterInfo, deviceID) == 84 && sizeof(((WGPUAdapterInfo*)0)->deviceID) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUAdapterInfo, subgroupMinSize) == 88 && sizeof(((WGPUAdapterInfo*)0)->subgroupMinSize) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUAdapterInfo, subgroupMaxSize) == 92 && sizeof(((WGPUAdapterInfo*)0)->subgroupMaxSize) == 4);
ONNXGPU_WGPU_ASSERT(sizeof(WGPULimits) == 152 && ONNXGPU_WGPU_ALIGNOF(WGPULimits) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, nextInChain) == 0 && sizeof(((WGPULimits*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxTextureDimension1D) == 8 && sizeof(((WGPULimits*)0)->maxTextureDimension1D) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxTextureDimension2D) == 12 && sizeof(((WGPULimits*)0)->maxTextureDimension2D) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxTextureDimension3D) == 16 && sizeof(((WGPULimits*)0)->maxTextureDimension3D) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxTextureArrayLayers) == 20 && sizeof(((WGPULimits*)0)->maxTextureArrayLayers) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxBindGroups) == 24 && sizeof(((WGPULimits*)0)->maxBindGroups) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxBindGroupsPlusVertexBuffers) == 28 && sizeof(((WGPULimits*)0)->maxBindGroupsPlusVertexBuffers) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxBindingsPerBindGroup) == 32 && sizeof(((WGPULimits*)0)->maxBindingsPerBindGroup) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxDynamicUniformBuffersPerPipelineLayout) == 36 && sizeof(((WGPULimits*)0)->maxDynamicUniformBuffersPerPipelineLayout) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxDynamicStorageBuffersPerPipelineLayout) == 40 && sizeof(((WGPULimits*)0)->maxDynamicStorageBuffersPerPipelineLayout) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxSampledTexturesPerShaderStage) == 44 && sizeof(((WGPULimits*)0)->maxSampledTexturesPerShaderStage) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxSamplersPerShaderStage) == 48 && sizeof(((WGPULimits*)0)->maxSamplersPerShaderStage) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxStorageBuffersPerShaderStage) == 52 && sizeof(((WGPULimits*)0)->maxStorageBuffersPerShaderStage) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxStorageTexturesPerShaderStage) == 56 && sizeof(((WGPULimits*)0)->maxStorageTexturesPerShaderStage) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxUniformBuffersPerShaderStage) == 60 && sizeof(((WGPULimits*)0)->maxUniformBuffersPerShaderStage) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxUniformBufferBindingSize) == 64 && sizeof(((WGPULimits*)0)->maxUniformBufferBindingSize) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxStorageBufferBindingSize) == 72 && sizeof(((WGPULimits*)0)->maxStorageBufferBindingSize) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, minUniformBufferOffsetAlignment) == 80 && sizeof(((WGPULimits*)0)->minUniformBufferOffsetAlignment) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, minStorageBufferOffsetAlignment) == 84 && sizeof(((WGPULimits*)0)->minStorageBufferOffsetAlignment) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxVertexBuffers) == 88 && sizeof(((WGPULimits*)0)->maxVertexBuffers) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxBufferSize) == 96 && sizeof(((WGPULimits*)0)->maxBufferSize) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxVertexAttributes) == 104 && sizeof(((WGPULimits*)0)->maxVertexAttributes) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxVertexBufferArrayStride) == 108 && sizeof(((WGPULimits*)0)->maxVertexBufferArrayStride) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxInterStageShaderVariables) == 112 && sizeof(((WGPULimits*)0)->maxInterStageShaderVariables) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxColorAttachments) == 116 && sizeof(((WGPULimits*)0)->maxColorAttachments) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxColorAttachmentBytesPerSample) == 120 && sizeof(((WGPULimits*)0)->maxColorAttachmentBytesPerSample) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxComputeWorkgroupStorageSize) == 124 && sizeof(((WGPULimits*)0)->maxComputeWorkgroupStorageSize) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxComputeInvocationsPerWorkgroup) == 128 && sizeof(((WGPULimits*)0)->maxComputeInvocationsPerWorkgroup) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxComputeWorkgroupSizeX) == 132 && sizeof(((WGPULimits*)0)->maxComputeWorkgroupSizeX) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxComputeWorkgroupSizeY) == 136 && sizeof(((WGPULimits*)0)->maxComputeWorkgroupSizeY) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxComputeWorkgroupSizeZ) == 140 && sizeof(((WGPULimits*)0)->maxComputeWorkgroupSizeZ) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxComputeWorkgroupsPerDimension) == 144 && sizeof(((WGPULimits*)0)->maxComputeWorkgroupsPerDimension) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPULimits, maxImmediateSize) == 148 && sizeof(((WGPULimits*)0)->maxImmediateSize) == 4);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUSupportedFeatures) == 16 && ONNXGPU_WGPU_ALIGNOF(WGPUSupportedFeatures) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUSupportedFeatures, featureCount) == 0 && sizeof(((WGPUSupportedFeatures*)0)->featureCount) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUSupportedFeatures, features) == 8 && sizeof(((WGPUSupportedFeatures*)0)->features) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUQueueDescriptor) == 24 && ONNXGPU_WGPU_ALIGNOF(WGPUQueueDescriptor) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUQueueDescriptor, nextInChain) == 0 && sizeof(((WGPUQueueDescriptor*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUQueueDescriptor, label) == 8 && sizeof(((WGPUQueueDescriptor*)0)->label) == 16);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUDeviceLostCallbackInfo) == 40 && ONNXGPU_WGPU_ALIGNOF(WGPUDeviceLostCallbackInfo) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDeviceLostCallbackInfo, nextInChain) == 0 && sizeof(((WGPUDeviceLostCallbackInfo*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDeviceLostCallbackInfo, mode) == 8 && sizeof(((WGPUDeviceLostCallbackInfo*)0)->mode) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDeviceLostCallbackInfo, callback) == 16 && sizeof(((WGPUDeviceLostCallbackInfo*)0)->callback) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDeviceLostCallbackInfo, userdata1) == 24 && sizeof(((WGPUDeviceLostCallbackInfo*)0)->userdata1) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDeviceLostCallbackInfo, userdata2) == 32 && sizeof(((WGPUDeviceLostCallbackInfo*)0)->userdata2) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUUncapturedErrorCallbackInfo) == 32 && ONNXGPU_WGPU_ALIGNOF(WGPUUncapturedErrorCallbackInfo) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUUncapturedErrorCallbackInfo, nextInChain) == 0 && sizeof(((WGPUUncapturedErrorCallbackInfo*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUUncapturedErrorCallbackInfo, callback) == 8 && sizeof(((WGPUUncapturedErrorCallbackInfo*)0)->callback) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUUncapturedErrorCallbackInfo, userdata1) == 16 && sizeof(((WGPUUncapturedErrorCallbackInfo*)0)->userdata1) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUUncapturedErrorCallbackInfo, userdata2) == 24 && sizeof(((WGPUUncapturedErrorCallbackInfo*)0)->userdata2) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUDeviceDescriptor) == 144 && ONNXGPU_WGPU_ALIGNOF(WGPUDeviceDescriptor) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDeviceDescriptor, nextInChain) == 0 && sizeof(((WGPUDeviceDescriptor*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDeviceDescriptor, label) == 8 && sizeof(((WGPUDeviceDescriptor*)0)->label) == 16);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDeviceDescriptor, requiredFeatureCount) == 24 && sizeof(((WGPUDeviceDescriptor*)0)->requiredFeatureCount) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDeviceDescriptor, requiredFeatures) == 32 && sizeof(((WGPUDeviceDescriptor*)0)->requiredFeatures) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDeviceDescriptor, requiredLimits) == 40 && sizeof(((WGPUDeviceDescriptor*)0)->requiredLimits) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDeviceDescriptor, defaultQueue) == 48 && sizeof(((WGPUDeviceDescriptor*)0)->defaultQueue) == 24);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDeviceDescriptor, deviceLostCallbackInfo) == 72 && sizeof(((WGPUDeviceDescriptor*)0)->deviceLostCallbackInfo) == 40);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDeviceDescriptor, uncapturedErrorCallbackInfo) == 112 && sizeof(((WGPUDeviceDescriptor*)0)->uncapturedErrorCallbackInfo) == 32);
ONNXGPU_WGPU_ASSERT(sizeof(WGPURequestDeviceCallbackInfo) == 40 && ONNXGPU_WGPU_ALIGNOF(WGPURequestDeviceCallbackInfo) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPURequestDeviceCallbackInfo, nextInChain) == 0 && sizeof(((WGPURequestDeviceCallbackInfo*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPURequestDeviceCallbackInfo, mode) == 8 && sizeof(((WGPURequestDeviceCallbackInfo*)0)->mode) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPURequestDeviceCallbackInfo, callback) == 16 && sizeof(((WGPURequestDeviceCallbackInfo*)0)->callback) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPURequestDeviceCallbackInfo, userdata1) == 24 && sizeof(((WGPURequestDeviceCallbackInfo*)0)->userdata1) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPURequestDeviceCallbackInfo, userdata2) == 32 && sizeof(((WGPURequestDeviceCallbackInfo*)0)->userdata2) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUBufferDescriptor) == 48 && ONNXGPU_WGPU_ALIGNOF(WGPUBufferDescriptor) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBufferDescriptor, nextInChain) == 0 && sizeof(((WGPUBufferDescriptor*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBufferDescriptor, label) == 8 && sizeof(((WGPUBufferDescriptor*)0)->label) == 16);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBufferDescriptor, usage) == 24 && sizeof(((WGPUBufferDescriptor*)0)->usage) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBufferDescriptor, size) == 32 && sizeof(((WGPUBufferDescriptor*)0)->size) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBufferDescriptor, mappedAtCreation) == 40 && sizeof(((WGPUBufferDescriptor*)0)->mappedAtCreation) == 4);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUDawnFakeBufferOOMForTesting) == 32 && ONNXGPU_WGPU_ALIGNOF(WGPUDawnFakeBufferOOMForTesting) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDawnFakeBufferOOMForTesting, chain) == 0 && sizeof(((WGPUDawnFakeBufferOOMForTesting*)0)->chain) == 16);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDawnFakeBufferOOMForTesting, fakeOOMAtWireClientMap) == 16 && sizeof(((WGPUDawnFakeBufferOOMForTesting*)0)->fakeOOMAtWireClientMap) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDawnFakeBufferOOMForTesting, fakeOOMAtNativeMap) == 20 && sizeof(((WGPUDawnFakeBufferOOMForTesting*)0)->fakeOOMAtNativeMap) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUDawnFakeBufferOOMForTesting, fakeOOMAtDevice) == 24 && sizeof(((WGPUDawnFakeBufferOOMForTesting*)0)->fakeOOMAtDevice) == 4);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUBufferMapCallbackInfo) == 40 && ONNXGPU_WGPU_ALIGNOF(WGPUBufferMapCallbackInfo) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBufferMapCallbackInfo, nextInChain) == 0 && sizeof(((WGPUBufferMapCallbackInfo*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBufferMapCallbackInfo, mode) == 8 && sizeof(((WGPUBufferMapCallbackInfo*)0)->mode) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBufferMapCallbackInfo, callback) == 16 && sizeof(((WGPUBufferMapCallbackInfo*)0)->callback) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBufferMapCallbackInfo, userdata1) == 24 && sizeof(((WGPUBufferMapCallbackInfo*)0)->userdata1) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBufferMapCallbackInfo, userdata2) == 32 && sizeof(((WGPUBufferMapCallbackInfo*)0)->userdata2) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUQueueWorkDoneCallbackInfo) == 40 && ONNXGPU_WGPU_ALIGNOF(WGPUQueueWorkDoneCallbackInfo) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUQueueWorkDoneCallbackInfo, nextInChain) == 0 && sizeof(((WGPUQueueWorkDoneCallbackInfo*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUQueueWorkDoneCallbackInfo, mode) == 8 && sizeof(((WGPUQueueWorkDoneCallbackInfo*)0)->mode) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUQueueWorkDoneCallbackInfo, callback) == 16 && sizeof(((WGPUQueueWorkDoneCallbackInfo*)0)->callback) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUQueueWorkDoneCallbackInfo, userdata1) == 24 && sizeof(((WGPUQueueWorkDoneCallbackInfo*)0)->userdata1) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUQueueWorkDoneCallbackInfo, userdata2) == 32 && sizeof(((WGPUQueueWorkDoneCallbackInfo*)0)->userdata2) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUPopErrorScopeCallbackInfo) == 40 && ONNXGPU_WGPU_ALIGNOF(WGPUPopErrorScopeCallbackInfo) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUPopErrorScopeCallbackInfo, nextInChain) == 0 && sizeof(((WGPUPopErrorScopeCallbackInfo*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUPopErrorScopeCallbackInfo, mode) == 8 && sizeof(((WGPUPopErrorScopeCallbackInfo*)0)->mode) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUPopErrorScopeCallbackInfo, callback) == 16 && sizeof(((WGPUPopErrorScopeCallbackInfo*)0)->callback) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUPopErrorScopeCallbackInfo, userdata1) == 24 && sizeof(((WGPUPopErrorScopeCallbackInfo*)0)->userdata1) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUPopErrorScopeCallbackInfo, userdata2) == 32 && sizeof(((WGPUPopErrorScopeCallbackInfo*)0)->userdata2) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUShaderModuleDescriptor) == 24 && ONNXGPU_WGPU_ALIGNOF(WGPUShaderModuleDescriptor) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUShaderModuleDescriptor, nextInChain) == 0 && sizeof(((WGPUShaderModuleDescriptor*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUShaderModuleDescriptor, label) == 8 && sizeof(((WGPUShaderModuleDescriptor*)0)->label) == 16);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUShaderSourceWGSL) == 32 && ONNXGPU_WGPU_ALIGNOF(WGPUShaderSourceWGSL) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUShaderSourceWGSL, chain) == 0 && sizeof(((WGPUShaderSourceWGSL*)0)->chain) == 16);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUShaderSourceWGSL, code) == 16 && sizeof(((WGPUShaderSourceWGSL*)0)->code) == 16);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUCompilationMessage) == 64 && ONNXGPU_WGPU_ALIGNOF(WGPUCompilationMessage) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCompilationMessage, nextInChain) == 0 && sizeof(((WGPUCompilationMessage*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCompilationMessage, message) == 8 && sizeof(((WGPUCompilationMessage*)0)->message) == 16);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCompilationMessage, type) == 24 && sizeof(((WGPUCompilationMessage*)0)->type) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCompilationMessage, lineNum) == 32 && sizeof(((WGPUCompilationMessage*)0)->lineNum) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCompilationMessage, linePos) == 40 && sizeof(((WGPUCompilationMessage*)0)->linePos) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCompilationMessage, offset) == 48 && sizeof(((WGPUCompilationMessage*)0)->offset) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCompilationMessage, length) == 56 && sizeof(((WGPUCompilationMessage*)0)->length) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUCompilationInfo) == 24 && ONNXGPU_WGPU_ALIGNOF(WGPUCompilationInfo) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCompilationInfo, nextInChain) == 0 && sizeof(((WGPUCompilationInfo*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCompilationInfo, messageCount) == 8 && sizeof(((WGPUCompilationInfo*)0)->messageCount) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCompilationInfo, messages) == 16 && sizeof(((WGPUCompilationInfo*)0)->messages) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUCompilationInfoCallbackInfo) == 40 && ONNXGPU_WGPU_ALIGNOF(WGPUCompilationInfoCallbackInfo) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCompilationInfoCallbackInfo, nextInChain) == 0 && sizeof(((WGPUCompilationInfoCallbackInfo*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCompilationInfoCallbackInfo, mode) == 8 && sizeof(((WGPUCompilationInfoCallbackInfo*)0)->mode) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCompilationInfoCallbackInfo, callback) == 16 && sizeof(((WGPUCompilationInfoCallbackInfo*)0)->callback) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCompilationInfoCallbackInfo, userdata1) == 24 && sizeof(((WGPUCompilationInfoCallbackInfo*)0)->userdata1) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCompilationInfoCallbackInfo, userdata2) == 32 && sizeof(((WGPUCompilationInfoCallbackInfo*)0)->userdata2) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUConstantEntry) == 32 && ONNXGPU_WGPU_ALIGNOF(WGPUConstantEntry) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUConstantEntry, nextInChain) == 0 && sizeof(((WGPUConstantEntry*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUConstantEntry, key) == 8 && sizeof(((WGPUConstantEntry*)0)->key) == 16);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUConstantEntry, value) == 24 && sizeof(((WGPUConstantEntry*)0)->value) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUComputeState) == 48 && ONNXGPU_WGPU_ALIGNOF(WGPUComputeState) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUComputeState, nextInChain) == 0 && sizeof(((WGPUComputeState*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUComputeState, module) == 8 && sizeof(((WGPUComputeState*)0)->module) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUComputeState, entryPoint) == 16 && sizeof(((WGPUComputeState*)0)->entryPoint) == 16);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUComputeState, constantCount) == 32 && sizeof(((WGPUComputeState*)0)->constantCount) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUComputeState, constants) == 40 && sizeof(((WGPUComputeState*)0)->constants) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUComputePipelineDescriptor) == 80 && ONNXGPU_WGPU_ALIGNOF(WGPUComputePipelineDescriptor) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUComputePipelineDescriptor, nextInChain) == 0 && sizeof(((WGPUComputePipelineDescriptor*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUComputePipelineDescriptor, label) == 8 && sizeof(((WGPUComputePipelineDescriptor*)0)->label) == 16);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUComputePipelineDescriptor, layout) == 24 && sizeof(((WGPUComputePipelineDescriptor*)0)->layout) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUComputePipelineDescriptor, compute) == 32 && sizeof(((WGPUComputePipelineDescriptor*)0)->compute) == 48);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUBindGroupEntry) == 56 && ONNXGPU_WGPU_ALIGNOF(WGPUBindGroupEntry) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBindGroupEntry, nextInChain) == 0 && sizeof(((WGPUBindGroupEntry*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBindGroupEntry, binding) == 8 && sizeof(((WGPUBindGroupEntry*)0)->binding) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBindGroupEntry, buffer) == 16 && sizeof(((WGPUBindGroupEntry*)0)->buffer) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBindGroupEntry, offset) == 24 && sizeof(((WGPUBindGroupEntry*)0)->offset) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBindGroupEntry, size) == 32 && sizeof(((WGPUBindGroupEntry*)0)->size) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBindGroupEntry, sampler) == 40 && sizeof(((WGPUBindGroupEntry*)0)->sampler) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBindGroupEntry, textureView) == 48 && sizeof(((WGPUBindGroupEntry*)0)->textureView) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUBindGroupDescriptor) == 48 && ONNXGPU_WGPU_ALIGNOF(WGPUBindGroupDescriptor) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBindGroupDescriptor, nextInChain) == 0 && sizeof(((WGPUBindGroupDescriptor*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBindGroupDescriptor, label) == 8 && sizeof(((WGPUBindGroupDescriptor*)0)->label) == 16);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBindGroupDescriptor, layout) == 24 && sizeof(((WGPUBindGroupDescriptor*)0)->layout) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBindGroupDescriptor, entryCount) == 32 && sizeof(((WGPUBindGroupDescriptor*)0)->entryCount) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUBindGroupDescriptor, entries) == 40 && sizeof(((WGPUBindGroupDescriptor*)0)->entries) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUCommandEncoderDescriptor) == 24 && ONNXGPU_WGPU_ALIGNOF(WGPUCommandEncoderDescriptor) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCommandEncoderDescriptor, nextInChain) == 0 && sizeof(((WGPUCommandEncoderDescriptor*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCommandEncoderDescriptor, label) == 8 && sizeof(((WGPUCommandEncoderDescriptor*)0)->label) == 16);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUPassTimestampWrites) == 24 && ONNXGPU_WGPU_ALIGNOF(WGPUPassTimestampWrites) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUPassTimestampWrites, nextInChain) == 0 && sizeof(((WGPUPassTimestampWrites*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUPassTimestampWrites, querySet) == 8 && sizeof(((WGPUPassTimestampWrites*)0)->querySet) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUPassTimestampWrites, beginningOfPassWriteIndex) == 16 && sizeof(((WGPUPassTimestampWrites*)0)->beginningOfPassWriteIndex) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUPassTimestampWrites, endOfPassWriteIndex) == 20 && sizeof(((WGPUPassTimestampWrites*)0)->endOfPassWriteIndex) == 4);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUComputePassDescriptor) == 32 && ONNXGPU_WGPU_ALIGNOF(WGPUComputePassDescriptor) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUComputePassDescriptor, nextInChain) == 0 && sizeof(((WGPUComputePassDescriptor*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUComputePassDescriptor, label) == 8 && sizeof(((WGPUComputePassDescriptor*)0)->label) == 16);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUComputePassDescriptor, timestampWrites) == 24 && sizeof(((WGPUComputePassDescriptor*)0)->timestampWrites) == 8);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUCommandBufferDescriptor) == 24 && ONNXGPU_WGPU_ALIGNOF(WGPUCommandBufferDescriptor) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCommandBufferDescriptor, nextInChain) == 0 && sizeof(((WGPUCommandBufferDescriptor*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUCommandBufferDescriptor, label) == 8 && sizeof(((WGPUCommandBufferDescriptor*)0)->label) == 16);
ONNXGPU_WGPU_ASSERT(sizeof(WGPUQuerySetDescriptor) == 32 && ONNXGPU_WGPU_ALIGNOF(WGPUQuerySetDescriptor) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUQuerySetDescriptor, nextInChain) == 0 && sizeof(((WGPUQuerySetDescriptor*)0)->nextInChain) == 8);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUQuerySetDescriptor, label) == 8 && sizeof(((WGPUQuerySetDescriptor*)0)->label) == 16);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUQuerySetDescriptor, type) == 24 && sizeof(((WGPUQuerySetDescriptor*)0)->type) == 4);
ONNXGPU_WGPU_ASSERT(offsetof(WGPUQuerySetDescriptor, count) == 28 && sizeof(((WGPUQuerySetDescriptor*)0)->count) == 4);

#ifdef __cplusplus
}  // extern "C"
#endif
